"""Naive serving: one request at a time, its whole prompt in one step, then decode to the end."""

from __future__ import annotations

from servescope.core.request import RequestStatus
from servescope.core.scheduler.base import Scheduler, SchedulerOutput


class NaiveScheduler(Scheduler):

    policy_name = "naive"
    def schedule(self) -> SchedulerOutput:
        output = SchedulerOutput()
        if self.running:
            request = self.running[0]
            blocks = self.kv.allocate_slots(request, 1)
            assert blocks is not None, "a lone request always fits (checked at arrival)"
            self._record(output, request, 1, blocks)
            return output
        if not self.waiting:
            return output
        request = self.waiting[0]
        blocks = self.kv.allocate_slots(request, request.num_tokens, reserve_full=True)
        if blocks is None:
            return output
        self.waiting.pop(0)
        request.status = RequestStatus.RUNNING
        self.running.append(request)
        output.new.append(request.id)
        output.num_cached_tokens[request.id] = 0
        self._record(output, request, request.num_tokens, blocks)
        return output

    def step_token_budget(self, output: SchedulerOutput) -> int:
        return max(self.config.max_num_batched_tokens, output.total_tokens)
