"""vLLM V1's scheduler as 0.33 runs it: one token budget, running requests first, then FCFS
(or priority) admission with head-of-line blocking, chunked prefill and recompute preemption.

    token budget (max_num_batched_tokens)
    |r0 1|r1 1|r2 1|r3 chunk 200 ...|r9 new, first chunk ......|  unused  |
     running list, admission order   waiting queue, head first
"""

from __future__ import annotations

import bisect

import numpy as np

from servescope.core.kv_cache_manager import PagedKVCacheManager
from servescope.core.records import ScheduledEntry
from servescope.core.request import Request
from servescope.core.scheduler import vector_decode
from servescope.core.scheduler.base import Scheduler, SchedulerOutput


class VllmV1Scheduler(Scheduler):

    policy_name = "vllm-v1"
    def add_request(self, request: Request) -> None:
        self.requests[request.id] = request
        self._enqueue(request, front=False)

    def schedule(self) -> SchedulerOutput:
        output = SchedulerOutput()
        self._limit_chunks = len(self.running) + len(self.waiting) > 1
        budget = self._schedule_running(output, self.config.max_num_batched_tokens)
        if not output.preempted:
            self._schedule_waiting(output, budget)
        return output

    def _chunk(self, num_new_tokens: int) -> int:
        threshold = self.config.long_prefill_token_threshold
        if self._limit_chunks and 0 < threshold < num_new_tokens:
            return threshold
        return num_new_tokens

    def _schedule_running(self, output: SchedulerOutput, budget: int) -> int:
        index = 0
        running = self.running
        mask = self._vector_mask()
        while index < len(running) and budget > 0:
            if mask is not None and mask[index]:
                taken = self._schedule_chunk(output, mask, index, budget)
                if taken:
                    budget -= taken
                    index += taken
                    continue
            request = running[index]
            n = min(self._num_new_tokens(request), budget)
            if n == 0:  # (async) nothing to schedule until its step in flight is sampled
                index += 1
                continue
            blocks = self.kv.allocate_slots(request, n)
            while blocks is None:
                position, victim = self._pick_victim()
                budget += self._unschedule(victim, output)
                self._preempt(victim, output)
                if victim is request:
                    break
                if position < index:  # (priority) an earlier, already scheduled request went
                    index -= 1
                blocks = self.kv.allocate_slots(request, n)
            if blocks is None:
                continue  # it preempted itself; vLLM goes on with the rest of the running list
            self._record(output, request, n, blocks)
            budget -= n
            index += 1
        return budget

    def _schedule_chunk(self, output: SchedulerOutput, mask: np.ndarray, index: int,
                        budget: int) -> int:
        """Plain decodes from `index` on, as one vector step; how many were taken."""
        return vector_decode.schedule_chunk(self.kv, output, self.running, mask, index, budget)

    def _num_new_tokens(self, request: Request) -> int:
        """Tokens a running request would take this step, before the budget."""
        return self._chunk(request.num_tokens - request.num_computed_tokens)

    def _schedule_waiting(self, output: SchedulerOutput, budget: int) -> None:
        config = self.config
        while self.waiting and budget > 0 and len(self.running) < config.max_num_seqs:
            request = self.waiting[0]
            computed = self.kv.get_computed_blocks(request)
            num_computed = len(computed) * self.kv.block_size
            n = self._chunk(request.num_tokens - num_computed)
            if not config.enable_chunked_prefill and n > budget:
                break
            n = min(n, budget)
            blocks = self.kv.allocate_slots(request, n, computed,
                                            reserve_full=config.scheduler_reserve_full_isl,
                                            watermark=bool(self.running))
            if blocks is None:
                break
            self._admit_head(output, num_computed, n, blocks)
            budget -= n

    def quiet_decode_steps(self) -> int:
        batch, kv, config = self.running, self.kv, self.config
        num_rows = len(batch)
        if (self.waiting or not num_rows or num_rows > config.max_num_batched_tokens
                or not isinstance(kv, PagedKVCacheManager)):
            return 0
        if not vector_decode.plain_decode_mask(num_rows, batch.prompt_len, batch.num_output,
                                               batch.num_computed).all():
            return 0
        left = int((batch.output_len[:num_rows] - batch.num_output[:num_rows]).min())
        return kv.decode_steps_fit(batch.num_computed[:num_rows], left)

    def _vector_mask(self) -> np.ndarray | None:
        """Plain-decode rows, when this step can take the vector path at all."""
        batch = self.running
        if len(batch) < vector_decode.MIN_ROWS or self.config.scheduling_policy != "fcfs":
            return None
        return vector_decode.plain_decode_mask(len(batch), batch.prompt_len, batch.num_output,
                                               batch.num_computed)

    def _pick_victim(self) -> tuple[int, Request]:
        """The request to preempt and its position in the running list."""
        if self.config.scheduling_policy == "priority":
            victim = max(self.running, key=lambda r: (r.priority, r.arrival_index))
            position = victim.slot
            self.running.remove(victim)
            return position, victim
        return len(self.running) - 1, self.running.pop()

    def _unschedule(self, victim: Request, output: SchedulerOutput) -> int:
        """Under priority a victim may already hold a slot this step: give its tokens back."""
        if self.config.scheduling_policy != "priority":
            return 0  # FCFS victims come from the tail, past every request scheduled so far
        for i, entry in enumerate(output.entries):
            if isinstance(entry, ScheduledEntry) and entry.id == victim.id:
                del output.entries[i]
                output.new_blocks.pop(victim.id, None)
                return entry.n
        return 0

    def _preempt(self, request: Request, output: SchedulerOutput) -> None:
        super()._preempt(request, output)
        self.waiting.pop(0)
        self._enqueue(request, front=True)

    def _enqueue(self, request: Request, front: bool) -> None:
        if self.config.scheduling_policy == "priority":
            keys = [(r.priority, r.arrival_index) for r in self.waiting]
            self.waiting.insert(bisect.bisect(keys, (request.priority, request.arrival_index)),
                                request)
        elif front:
            self.waiting.insert(0, request)
        else:
            self.waiting.append(request)

