"""vLLM 0.33's AsyncScheduler: step N + 1 is planned while step N runs, before its tokens exist.

A request scheduled to sample holds a placeholder for that token (counted in
`num_computed_tokens`, not in `num_tokens`); step N's update turns it into a token, caches the
blocks it completed and frees the requests that finished, after step N + 1 was planned with
their blocks still held. A request whose last token is in flight is not scheduled again.
"""

from __future__ import annotations

import numpy as np

from servescope.core.config import EngineConfig
from servescope.core.kv_cache_manager import KVCacheManager
from servescope.core.records import ScheduledEntry
from servescope.core.request import Request, RequestStatus
from servescope.core.scheduler.base import SchedulerOutput
from servescope.core.scheduler.vllm_v1 import VllmV1Scheduler


class VllmV1AsyncScheduler(VllmV1Scheduler):
    policy_name = ""  # not a policy of its own: vllm-v1 under async_scheduling (engine picks it)

    def __init__(self, config: EngineConfig, kv: KVCacheManager) -> None:
        super().__init__(config, kv)
        self.num_in_flight: dict[str, int] = {}  # tokens scheduled in steps not yet updated

    def schedule(self) -> SchedulerOutput:
        output = super().schedule()
        for entry in self._entries(output):
            self.num_in_flight[entry.id] = self.num_in_flight.get(entry.id, 0) + entry.n
            if entry.sampled:
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
        return None  # placeholders are per request; the columnar decode path does not track them

    def _preempt(self, request: Request, output: SchedulerOutput) -> None:
        super()._preempt(request, output)
        request.num_output_placeholders = 0  # its step in flight still delivers, as stale

    def update_from_output(self, output: SchedulerOutput, iteration: int) -> list[Request]:
        """Step `output`'s tokens arrive (one step after the next was planned)."""
        finished: list[Request] = []
        for entry in self._entries(output):
            request = self.requests.get(entry.id)
            if request is None:
                continue
            in_flight = self.num_in_flight.pop(entry.id) - entry.n
            if in_flight:
                self.num_in_flight[entry.id] = in_flight
            if not entry.sampled:
                continue
            request.add_token(iteration)
            if request.status is RequestStatus.RUNNING:  # else preempted since: stale output
                request.num_output_placeholders -= 1
                if self.kv.enable_caching:
                    self.kv.cache_full_blocks(request, request.num_computed_tokens - in_flight)
            if request.is_finished:
                finished.append(request)
        self._release(finished)
        return finished

    def _release(self, finished: list[Request]) -> None:
        self.released = [r.id for r in finished]
        running = [r for r in finished if r.status is RequestStatus.RUNNING]
        for request in finished:
            if request.status is not RequestStatus.RUNNING:
                self.waiting.remove(request)  # its last token arrived after a preemption
            del self.requests[request.id]
            self.num_in_flight.pop(request.id, None)
            request.status = RequestStatus.FINISHED
            self.kv.free(request)
        if running:
            self.running.remove_many(running)

    @staticmethod
    def _entries(output: SchedulerOutput) -> list[ScheduledEntry]:
        entries = [e for e in output.entries if isinstance(e, ScheduledEntry)]
        assert len(entries) == len(output.entries), "no decode chunks under async scheduling"
        return entries
