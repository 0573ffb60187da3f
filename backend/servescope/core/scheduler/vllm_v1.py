"""vLLM V1's scheduler as 0.33 runs it: one token budget, running requests first, then FCFS
(or priority) admission with head-of-line blocking, chunked prefill and recompute preemption;
with a speculative config, each decode also takes the drafts it holds (core/scheduler/
spec_decode.py), and the vector path is off.

    token budget (max_num_batched_tokens)
    |r0 1|r1 1|r2 1|r3 chunk 200 ...|r9 new, first chunk ......|  unused  |
     running list, admission order   waiting queue, head first
"""

from __future__ import annotations

import bisect

import numpy as np

from servescope.core.config import EngineConfig
from servescope.core.kv_cache_manager import KVCacheManager, PagedKVCacheManager
from servescope.core.records import ScheduledEntry
from servescope.core.request import Request
from servescope.core.scheduler import spec_decode, vector_decode
from servescope.core.scheduler.base import DecodeMask, Scheduler, SchedulerOutput


class VllmV1Scheduler(Scheduler):

    policy_name = "vllm-v1"

    def __init__(self, config: EngineConfig, kv: KVCacheManager) -> None:
        super().__init__(config, kv)
        spec = self.spec
        self.lookahead = 0 if spec is None else spec_decode.num_lookahead_tokens(spec)
        self.draft_slots = 0 if spec is None else spec_decode.draft_slots(spec)
        self.prefill_lookahead = (0 if spec is None
                                  else spec_decode.num_prefill_lookahead_tokens(spec))
        self._prefill_scheduled = False  # (speculative) a running prefill chunk this step
        self._num_running_scheduled = 0

    def add_request(self, request: Request) -> None:
        self.requests[request.id] = request
        self._enqueue(request, front=False)

    @property
    def has_unfinished(self) -> bool:
        return bool(self.running or self.waiting) or (self.connector is not None
                                                      and self.connector.waiting_for_kv)

    def wake_s(self) -> float | None:
        return None if self.connector is None else self.connector.wake_s(self.now_s)

    def schedule(self) -> SchedulerOutput:
        output = SchedulerOutput()
        if self.connector is not None:  # transfers reported done since the last step
            self.connector.before_schedule(self)
        self._limit_chunks = len(self.running) + len(self.waiting) > 1
        budget = self._schedule_running(output, self.config.max_num_batched_tokens)
        self._num_running_scheduled = len(output.entries)
        if not output.preempted:
            self._schedule_waiting(output, budget)
        return output

    def _chunk(self, num_new_tokens: int) -> int:
        threshold = self.config.long_prefill_token_threshold
        if self._limit_chunks and 0 < threshold < num_new_tokens:
            return threshold
        return num_new_tokens

    def _room(self, output: SchedulerOutput, budget: int) -> int:
        """Tokens the next request may take: vLLM's min(token_budget, input_budget -
        draft_slots), input_budget also paying draft_slots per scheduled request
        (Scheduler.schedule); the token budget itself without drafter slots."""
        return budget - self.draft_slots * (len(output.entries) + 1)

    def _schedule_running(self, output: SchedulerOutput, budget: int) -> int:
        index = 0
        running = self.running
        mask = self._vector_mask()
        self._prefill_scheduled = False
        while index < len(running) and budget > 0 and self._room(output, budget) > 0:
            if mask is not None and mask[index]:
                taken = self._schedule_chunk(output, mask, index, budget)
                if taken:
                    budget -= taken
                    index += taken
                    continue
            request = running[index]
            n = spec_decode.reserve_prefill_lookahead(
                self.prefill_lookahead, request.num_tokens, request.num_computed_tokens,
                min(self._num_new_tokens(request), self._room(output, budget),
                    self._positions_left(request)))
            if n == 0:  # (async) nothing to schedule until its step in flight is sampled
                index += 1
                continue
            blocks = self.kv.allocate_slots(request, n, num_lookahead_tokens=self.lookahead)
            while blocks is None:
                position, victim = self._pick_victim()
                budget += self._unschedule(victim, output)
                self._preempt(victim, output)
                if victim is request:
                    break
                if position < index:  # (priority) an earlier, already scheduled request went
                    index -= 1
                blocks = self.kv.allocate_slots(request, n, num_lookahead_tokens=self.lookahead)
            if blocks is None:
                continue  # it preempted itself; vLLM goes on with the rest of the running list
            self._prefill_scheduled |= request.is_prefill_chunk
            self._record(output, request, n, blocks, self._take_drafts(request, n))
            budget -= n
            index += 1
        return budget

    def update_from_output(self, output: SchedulerOutput, iteration: int) -> list[Request]:
        """With speculation, each verify keeps a prefix of its drafts (spec_decode.verify),
        the blocks its kept tokens fill are cached (Scheduler.update_from_output), then the
        drafter proposes for the requests that sampled and go on
        (EngineCore.post_step -> Scheduler.update_draft_token_ids)."""
        if self.spec is None:
            return super().update_from_output(output, iteration)
        finished: list[Request] = []
        sampled: list[Request] = []
        for entry in output.entries:
            assert isinstance(entry, ScheduledEntry), "no vector path with speculation"
            request = self.requests[entry.id]
            output.accepted[entry.id] = 0
            if not entry.sampled:
                continue
            output.accepted[entry.id] = spec_decode.verify(
                request, output.drafts.get(entry.id, 0), entry.id in output.padded,
                self.acceptance, iteration)[0]
            if self.kv.enable_caching:
                self.kv.cache_full_blocks(request, request.num_computed_tokens)
            (finished if request.is_finished else sampled).append(request)
        k = spec_decode.drafts_per_step(self.spec, len(output.entries), self.config.max_num_seqs)
        for request in sampled:
            request.num_draft_tokens = k
        return self._finish(finished)

    def _schedule_chunk(self, output: SchedulerOutput, mask: DecodeMask, index: int,
                        budget: int) -> int:
        """Plain decodes from `index` on, as one vector step; how many were taken."""
        assert isinstance(mask, np.ndarray)  # (this policy's _vector_mask gives numpy's)
        return vector_decode.schedule_chunk(self.kv, output, self.running, mask, index, budget)

    def _num_new_tokens(self, request: Request) -> int:
        """Tokens a running request would take this step, before the budget (its drafts too:
        vLLM's num_tokens_with_spec)."""
        return self._chunk(request.num_tokens + request.num_draft_tokens
                           - request.num_computed_tokens)

    def _positions_left(self, request: Request) -> int:
        """(Speculative) tokens that keep the input inside max_model_len, one position kept
        for the sampled token (Scheduler.schedule: "Make sure the input position does not
        exceed the max model len. This is necessary when using spec decoding.")."""
        if self.spec is None or not self.config.max_model_len:
            return 1 << 62  # never binds without drafts: admission checked the whole length
        return self.config.max_model_len - request.num_computed_tokens - 1

    def _take_drafts(self, request: Request, n: int) -> int:
        """The drafts among a running request's `n` tokens: those past its known (and in
        flight) tokens, at most the ones it holds, which it then drops (Scheduler.schedule,
        "Speculative decode related": spec_token_ids trimmed, then cleared)."""
        held = request.num_draft_tokens
        if not held:
            return 0
        request.num_draft_tokens = 0
        past = (n + request.num_computed_tokens - request.num_tokens
                - request.num_output_placeholders)
        return max(0, min(past, held))

    def _padding(self, num_computed: int, n: int) -> int:
        """Placeholder drafts for a one-token admission (Scheduler.schedule, "Pad new decode
        requests to uniform spec decoding size"): K when no running prefill chunk was
        scheduled and some running request was (or it has computed tokens) and 1 + K + 1
        tokens fit max_model_len; 0 when it is not padded."""
        spec = self.spec
        if (spec is None or n != 1 or not spec_decode.pads_admission(spec)
                or self._prefill_scheduled
                or not (self._num_running_scheduled or num_computed > 0)):
            return 0
        k = spec.num_speculative_tokens
        if num_computed + 1 + k + 1 > (self.config.max_model_len or 1 << 62):
            return 0
        return k

    def _schedule_waiting(self, output: SchedulerOutput, budget: int) -> None:
        """Admissions from the head; one whose chunk the prefill lookahead empties is set
        aside for this step and the next one tried (Scheduler.schedule, skip_request; the
        set-aside go back to the front in order, waiting.prepend_requests)."""
        skipped: list[Request] = []
        self._admit_waiting(output, budget, skipped)
        for request in reversed(skipped):
            self.waiting.insert(0, request)

    def _admit_waiting(self, output: SchedulerOutput, budget: int,
                       skipped: list[Request]) -> None:
        config = self.config
        while (self.waiting and budget > 0 and len(self.running) < config.max_num_seqs
               and self._room(output, budget) > 0):
            request = self.waiting[0]
            connector = self.connector
            if connector is not None and connector.wants_load(request):  # (kv_connector.py)
                if not connector.start_load(self, request, output,
                                           watermark=bool(self.running)):
                    break
                continue
            if request.num_computed_tokens:  # its KV loaded by a connector: no prefix lookup
                computed, num_computed = [], request.num_computed_tokens
            else:
                computed = self.kv.get_computed_blocks(request)
                num_computed = len(computed) * self.kv.block_size
            room = self._room(output, budget)
            n = request.num_tokens - num_computed
            drafts = self._padding(num_computed, n)
            if drafts and 1 + drafts > room:
                break  # vLLM: "Prefer to not schedule than schedule un-padded"
            n = self._chunk(n + drafts)
            if not config.enable_chunked_prefill and n > room:
                break
            n = spec_decode.reserve_prefill_lookahead(self.prefill_lookahead,
                                                      request.num_tokens, num_computed,
                                                      min(n, room))
            if n == 0:
                skipped.append(self.waiting.pop(0))
                continue
            blocks = self.kv.allocate_slots(request, n, computed,
                                            reserve_full=config.scheduler_reserve_full_isl,
                                            watermark=bool(self.running),
                                            num_lookahead_tokens=self.lookahead)
            if blocks is None:
                break
            self._admit_head(output, num_computed, n, blocks, drafts)
            if drafts:
                output.padded.add(request.id)
            budget -= n

    def quiet_decode_steps(self) -> int:
        batch, kv, config = self.running, self.kv, self.config
        num_rows = len(batch)
        if (self.spec is not None or self.waiting or not num_rows
                or (self.connector is not None and self.connector.busy)
                or num_rows > config.max_num_batched_tokens
                or not isinstance(kv, PagedKVCacheManager)):
            return 0
        if not vector_decode.plain_decode_mask(num_rows, batch.prompt_len, batch.num_output,
                                               batch.num_computed).all():
            return 0
        left = int((batch.output_len[:num_rows] - batch.num_output[:num_rows]).min())
        return kv.decode_steps_fit(batch.num_computed[:num_rows], left)

    def _vector_mask(self) -> DecodeMask | None:
        """Plain-decode rows, when this step can take the vector path at all."""
        batch = self.running
        if (len(batch) < vector_decode.MIN_ROWS or self.config.scheduling_policy != "fcfs"
                or self.spec is not None):  # speculative decodes are 1 + drafts each
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
                output.drafts.pop(victim.id, None)
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

