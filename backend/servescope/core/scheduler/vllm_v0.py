"""vLLM V0-style continuous batching without chunked prefill, the contrast Sarathi-Serve studied.

A step is prefill-only whenever the head of the waiting queue can be admitted with its whole
prompt; otherwise it is a decode step for every running request. Each admission therefore
stalls all decodes for a whole prompt (a generation stall).
"""

from __future__ import annotations

from servescope.core.scheduler.base import Scheduler, SchedulerOutput


class VllmV0Scheduler(Scheduler):
    policy_name = "vllm-v0"
    def schedule(self) -> SchedulerOutput:
        output = SchedulerOutput()
        self._prefill_step(output)
        if not output.entries:
            self._decode_step(output)
        return output

    def _prefill_step(self, output: SchedulerOutput) -> None:
        budget = self.config.max_num_batched_tokens
        while self.waiting and len(self.running) < self.config.max_num_seqs:
            request = self.waiting[0]
            computed = self.kv.get_computed_blocks(request)
            num_computed = len(computed) * self.kv.block_size
            n = request.num_tokens - num_computed
            if n > budget and output.entries:
                break  # a prompt larger than the budget still runs, alone
            blocks = self.kv.allocate_slots(request, n, computed, reserve_full=True)
            if blocks is None:
                break
            self._admit_head(output, num_computed, n, blocks)
            budget -= n

    def _decode_step(self, output: SchedulerOutput) -> None:
        index = 0
        while index < len(self.running):
            request = self.running[index]
            blocks = self.kv.allocate_slots(request, 1)
            while blocks is None:
                victim = self.running.pop()
                self._preempt(victim, output)
                if victim is request:
                    break
                blocks = self.kv.allocate_slots(request, 1)
            if blocks is None:
                break
            self._record(output, request, 1, blocks)
            index += 1

    def step_token_budget(self, output: SchedulerOutput) -> int:
        # V0 required max_num_batched_tokens >= max_model_len; a longer prompt here runs alone.
        return max(self.config.max_num_batched_tokens, output.total_tokens)
