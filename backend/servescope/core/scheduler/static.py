"""Static batching: batches of B in arrival order, padded, run to the longest member's end.

A batch forms when B requests wait, when the window since its first member's arrival has
passed, or when no more requests will arrive. Every member prefills the longest prompt
(padding), decodes until the longest output is done (finished members decode padding), and
holds KV for the padded shape until the whole batch ends. Nobody joins mid-batch.
"""

from __future__ import annotations

from servescope.core.records import ScheduledEntry
from servescope.core.request import Request, RequestStatus
from servescope.core.scheduler.base import Scheduler, SchedulerOutput


class StaticScheduler(Scheduler):

    policy_name = "static"
    def schedule(self) -> SchedulerOutput:
        output = SchedulerOutput()
        if self.running:
            self._decode(output)
        elif self._batch_ready():
            self._start_batch(output)
        return output

    def step_token_budget(self, output: SchedulerOutput) -> int:
        return max(self.config.max_num_batched_tokens, output.total_tokens)

    def _batch_ready(self) -> bool:
        size = min(self.config.static_batch_size, self.config.max_num_seqs)
        if len(self.waiting) >= size or (self.waiting and not self.more_arrivals):
            return True
        wake = self.wake_s()
        return wake is not None and self.now_s >= wake

    def wake_s(self) -> float | None:
        window = self.config.static_window_s
        if window is None or not self.waiting or self.running:
            return None
        return self.waiting[0].arrival_time + window

    def _start_batch(self, output: SchedulerOutput) -> None:
        batch = self.waiting[: min(self.config.static_batch_size, self.config.max_num_seqs)]
        # Shrink the batch until every member's padded shape fits, then reserve once.
        while len(batch) > 1 and len(batch) > self.kv.num_fitting(self._padded(batch)):
            batch = batch[:-1]
        padded = self._padded(batch)
        prompt = max(r.prompt_len for r in batch)
        for request in batch:
            blocks = self.kv.reserve(request, padded)
            assert blocks is not None, "a lone request fits an empty cache (checked at arrival)"
            self.waiting.remove(request)
            request.status = RequestStatus.RUNNING
            self.running.append(request)
            output.new.append(request.id)
            output.num_cached_tokens[request.id] = 0
            output.new_blocks[request.id] = tuple(self.kv.tables[request.id])
            output.entries.append(ScheduledEntry(request.id, prompt, 0, True, True))
            request.first_scheduled_time = self.now_s
            request.num_computed_tokens = request.prompt_len

    @staticmethod
    def _padded(batch: list[Request]) -> int:
        return max(r.prompt_len for r in batch) + max(r.output_len for r in batch)

    def _decode(self, output: SchedulerOutput) -> None:
        for request in self.running:
            live = not request.is_finished
            start = request.num_computed_tokens
            output.entries.append(ScheduledEntry(request.id, 1, start, live, False))
            if live:
                request.num_computed_tokens = start + 1

    def update_from_output(self, output: SchedulerOutput, iteration: int) -> list[Request]:
        finished = self._sample(output, iteration)
        self.released = []
        if all(r.is_finished for r in self.running):
            members = list(self.running)
            self.released = [r.id for r in members]
            for request in members:
                request.status = RequestStatus.FINISHED
                self.kv.free(request)
                del self.requests[request.id]
            self.running.remove_many(members)
        return finished
