"""vLLM 0.33's AsyncScheduler: step N + 1 is planned while step N runs, before its tokens exist.

A request scheduled to sample holds a placeholder for that token (counted in
`num_computed_tokens`, not in `num_tokens`); step N's update turns it into a token, caches the
blocks it completed and frees the requests that finished, after step N + 1 was planned with
their blocks still held. A request whose last token is in flight is not scheduled again.
With speculation a decode's drafts are placeholders too, and every request that samples holds
K placeholder drafts for its next step at once (AsyncScheduler._update_after_schedule; no
drafts come through update_draft_token_ids under async, EngineCore.post_step), so under load
it drafts as many as the sync scheduler (recordings async_spec_loaded and spec_loaded).
"""

from __future__ import annotations

from servescope.core.config import EngineConfig
from servescope.core.kv_cache_manager import KVCacheManager
from servescope.core.records import ScheduledEntry
from servescope.core.request import Request, RequestStatus
from servescope.core.scheduler import async_decode, spec_decode
from servescope.core.scheduler.base import DecodeChunk, DecodeMask, SchedulerOutput
from servescope.core.scheduler.vllm_v1 import VllmV1Scheduler


class VllmV1AsyncScheduler(VllmV1Scheduler):
    policy_name = ""  # not a policy of its own: vllm-v1 under async_scheduling (engine picks it)

    def __init__(self, config: EngineConfig, kv: KVCacheManager) -> None:
        super().__init__(config, kv)
        # (speculative) tokens scheduled per request in steps not yet updated: vLLM's
        # Request.num_in_flight_tokens, which rollbacks make differ from the planned starts
        self.num_in_flight_tokens: dict[str, int] = {}

    def schedule(self) -> SchedulerOutput:
        output = super().schedule()
        k = 0 if self.spec is None else spec_decode.drafts_per_step(
            self.spec, len(output.entries), self.config.max_num_seqs)
        in_flight = self.num_in_flight_tokens
        for entry in output.entries:  # vLLM adds the placeholders once the plan is made
            if self.spec is not None and isinstance(entry, ScheduledEntry):
                in_flight[entry.id] = in_flight.get(entry.id, 0) + entry.n
            if isinstance(entry, DecodeChunk):
                self.running.num_placeholders[entry.lo:entry.hi] += 1
            elif entry.sampled:
                request = self.requests[entry.id]
                request.num_output_placeholders += 1 + output.drafts.get(entry.id, 0)
                request.num_draft_tokens = k
        return output

    def _num_new_tokens(self, request: Request) -> int:
        placeholders = request.num_output_placeholders
        # The step in flight samples the last token: no further step can be needed.
        if placeholders and (request.num_computed_tokens + 2 - placeholders
                             >= request.prompt_len + request.output_len):
            return 0
        return self._chunk(request.num_tokens + request.num_draft_tokens + placeholders
                           - request.num_computed_tokens)

    def _vector_mask(self) -> DecodeMask | None:
        if (len(self.running) < async_decode.MIN_ROWS or self.config.scheduling_policy != "fcfs"
                or self.spec is not None):  # speculative decodes are 1 + drafts each
            return None
        return async_decode.plain_decode_mask(self.running)

    def _schedule_chunk(self, output: SchedulerOutput, mask: DecodeMask, index: int,
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
                finished += self._sample_one(output, entry, iteration)
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
                finished += self._sample_one(output, ScheduledEntry(rid, 1, start, True, False),
                                             iteration)
        self._release(finished)
        return finished

    def _update_rows(self, entry: DecodeChunk, iteration: int) -> list[Request]:
        """async_decode.update_chunk for a chunk whose rows are where it planned them (the
        batch unchanged since), on the batch's own columns: the finished, in row order."""
        running, kv, lo, hi = self.running, self.kv, entry.lo, entry.hi
        done = running.sample_chunk(lo, hi, iteration)
        running.num_placeholders[lo:hi] -= 1
        if kv.enable_caching:  # (plain Python: a batch is small, numpy calls cost more)
            requests, size = running.requests, kv.block_size
            for row, p in enumerate(entry.start.tolist(), lo):
                if (p + 1) % size == 0:
                    kv.cache_full_blocks(requests[row], p + 1)
        return done

    def _sample_one(self, output: SchedulerOutput, entry: ScheduledEntry,
                    iteration: int) -> list[Request]:
        """One request's tokens: one, or with drafts the verify's (spec_decode.verify); the
        blocks they complete are cached unless the output is stale (preempted since). A
        request gone since (finished) takes nothing: its `accepted` stays unset (-1)."""
        request = self.requests.get(entry.id)
        if request is None:
            return []
        in_flight = self.num_in_flight_tokens.pop(entry.id, entry.n) - entry.n
        if in_flight:
            self.num_in_flight_tokens[entry.id] = in_flight
        output.accepted[entry.id] = 0
        if not entry.sampled:
            return []
        running = request.status is RequestStatus.RUNNING  # else preempted since: stale
        drafts = output.drafts.get(entry.id, 0)
        accepted, kept = spec_decode.verify(request, drafts, entry.id in output.padded,
                                            self.acceptance, iteration, stale=not running)
        output.accepted[entry.id] = accepted
        if running and self.kv.enable_caching:  # through this step: what is not in flight
            through = (entry.start + entry.n if self.spec is None  # no rollbacks
                       else request.num_computed_tokens - in_flight)
            self.kv.cache_full_blocks(request, through)
        return [request] if request.is_finished else []

    def _release(self, finished: list[Request]) -> None:
        self.released = [r.id for r in finished]
        if not finished:  # (most updates)
            return
        running = [r for r in finished if r.status is RequestStatus.RUNNING]
        for request in finished:
            if request.status is not RequestStatus.RUNNING:
                self.waiting.remove(request)  # its last token arrived after a preemption
            del self.requests[request.id]
            self.num_in_flight_tokens.pop(request.id, None)
            request.status = RequestStatus.FINISHED
            self.kv.free(request)
        if running:
            self.running.remove_many(running)
