"""vLLM 0.33's AsyncScheduler: step N + 1 is planned while step N runs, before its tokens exist.

A request scheduled to sample holds a placeholder for that token (counted in
`num_computed_tokens`, not in `num_tokens`); step N's update turns it into a token, caches the
blocks it completed and frees the requests that finished, after step N + 1 was planned with
their blocks still held. A request whose last token is in flight is not scheduled again.
"""

from __future__ import annotations

import numpy as np

from servescope.core.records import ScheduledEntry
from servescope.core.request import Request, RequestStatus
from servescope.core.scheduler import async_decode, vector_decode
from servescope.core.scheduler.base import DecodeChunk, SchedulerOutput
from servescope.core.scheduler.vllm_v1 import VllmV1Scheduler


class VllmV1AsyncScheduler(VllmV1Scheduler):
    policy_name = ""  # not a policy of its own: vllm-v1 under async_scheduling (engine picks it)

    def schedule(self) -> SchedulerOutput:
        output = super().schedule()
        for entry in output.entries:  # vLLM adds the placeholders once the plan is made
            if isinstance(entry, DecodeChunk):
                self.running.num_placeholders[entry.lo:entry.hi] += 1
            elif entry.sampled:
                self.requests[entry.id].num_output_placeholders += 1
        return output

    def _num_new_tokens(self, request: Request) -> int:
        placeholders = request.num_output_placeholders
        # The step in flight samples the last token: no further step can be needed.
        if placeholders and (request.num_computed_tokens + 2 - placeholders
                             >= request.prompt_len + request.output_len):
            return 0
        return self._chunk(request.num_tokens + placeholders - request.num_computed_tokens)

    def _vector_mask(self) -> np.ndarray | None:
        if len(self.running) < vector_decode.MIN_ROWS or self.config.scheduling_policy != "fcfs":
            return None
        return async_decode.plain_decode_mask(self.running)

    def _schedule_chunk(self, output: SchedulerOutput, mask: np.ndarray, index: int,
                        budget: int) -> int:
        return async_decode.schedule_chunk(self.kv, output, self.running, mask, index, budget)

    def _preempt(self, request: Request, output: SchedulerOutput) -> None:
        super()._preempt(request, output)
        request.num_output_placeholders = 0  # its step in flight still delivers, as stale

    def update_from_output(self, output: SchedulerOutput, iteration: int) -> list[Request]:
        """Step `output`'s tokens arrive (one step after the next was planned)."""
        finished: list[Request] = []
        for entry in output.entries:
            if isinstance(entry, ScheduledEntry):
                finished += self._sample_one(entry.id, entry.start + entry.n, entry.sampled,
                                             iteration)
                continue
            if entry.ids == self.running.ids[entry.lo:entry.hi]:
                finished += self._update_rows(entry, iteration)
                continue
            requests = [self.requests.get(rid) for rid in entry.ids]
            if async_decode.all_running(requests):
                finished += async_decode.update_chunk(self.kv, self.running, requests,
                                                      entry.start, iteration)
                continue
            for rid, start in zip(entry.ids, entry.start.tolist(), strict=True):
                finished += self._sample_one(rid, start + 1, True, iteration)
        self._release(finished)
        return finished

    def _update_rows(self, entry: DecodeChunk, iteration: int) -> list[Request]:
        """async_decode.update_chunk for a chunk whose rows are where it planned them (the
        batch unchanged since), on the batch's own columns: the finished, in row order."""
        running, kv, lo, hi = self.running, self.kv, entry.lo, entry.hi
        done = running.sample_chunk(lo, hi, iteration)
        running.num_placeholders[lo:hi] -= 1
        if kv.enable_caching:
            requests, start = running.requests, entry.start
            for row in ((start + 1) % kv.block_size == 0).nonzero()[0].tolist():
                kv.cache_full_blocks(requests[lo + row], int(start[row]) + 1)
        return done

    def _sample_one(self, rid: str, computed: int, sampled: bool,
                    iteration: int) -> list[Request]:
        """One request's token; `computed` is its num_computed_tokens through that step."""
        request = self.requests.get(rid)
        if request is None or not sampled:
            return []
        request.add_token(iteration)
        if request.status is RequestStatus.RUNNING:  # else preempted since: stale output
            request.num_output_placeholders -= 1
            if self.kv.enable_caching:
                self.kv.cache_full_blocks(request, computed)
        return [request] if request.is_finished else []

    def _release(self, finished: list[Request]) -> None:
        self.released = [r.id for r in finished]
        running = [r for r in finished if r.status is RequestStatus.RUNNING]
        for request in finished:
            if request.status is not RequestStatus.RUNNING:
                self.waiting.remove(request)  # its last token arrived after a preemption
            del self.requests[request.id]
            request.status = RequestStatus.FINISHED
            self.kv.free(request)
        if running:
            self.running.remove_many(running)
