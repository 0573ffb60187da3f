"""The engine loop: decide (schedule), price (step time), apply (update, clock); one record a step.

Two clocks run together. The step clock counts loop steps and is what `arrival_step` refers to;
the time clock advances by each step's priced time and is what `arrival_s` refers to. When
nothing is runnable the clock the workload uses jumps to the next arrival. Under
`async_scheduling` the loop is core/batch_queue.py's (schedule N + 1, then update N). advance()
takes a quiet stretch of decode steps as one DecodeRun (fast-forward), records the steps' own.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any

from servescope.core import cost_model, fast_forward, metrics
from servescope.core.batch_queue import BatchQueue
from servescope.core.config import ConfigError, EngineConfig
from servescope.core.decode_run import DecodeRun
from servescope.core.kv_cache_manager import KVCacheManager, cdiv
from servescope.core.kv_counting import CountingKVCacheManager
from servescope.core.records import StepRecord
from servescope.core.request import FinishedRequest, Request, RequestSpec, RequestStatus
from servescope.core.scheduler.base import SchedulerOutput
from servescope.core.scheduler.make import make_scheduler
from servescope.core.scheduler.vllm_v1 import VllmV1Scheduler
from servescope.core.step_time import StepTimeFn, placeholder_step_time_ms


class Engine:
    def __init__(self, config: EngineConfig, requests: Sequence[RequestSpec],
                 step_time: StepTimeFn | None = None, fast_forward: bool = True,
                 records: bool = True) -> None:
        priced = (config.model or config.model_config) is not None and config.gpu is not None
        if priced:
            config = cost_model.with_derived_blocks(config)
        if config.num_gpu_blocks is None:
            raise ConfigError("num_gpu_blocks", "required unless model and gpu size the cache")
        self.config = config
        # records=False: run_to_end() and summaries only (the KV cache may keep no block ids)
        self.records = records
        self.scheduler = make_scheduler(config, requests, records)
        if step_time is None:
            step_time = cost_model.make_step_time(config) if priced else placeholder_step_time_ms
        self.step_time = step_time
        self.priced = priced  # False: step times come from the placeholder, not the cost model
        self.step_clock = all(s.arrival_step is not None for s in requests)
        self._pending = deque(sorted(requests, key=self._arrival_key))
        self.step_no = 0
        self.time_s = 0.0
        self.iter = 0
        self.done_requests: list[FinishedRequest] = []
        self.rejected: list[tuple[str, str]] = []
        self._num_arrived = 0
        self.waste_totals: dict[str, int] = {}
        # end of each engine iteration, for token times (8 bytes a step, not a float object)
        self.step_end_s = array("d")
        self.batch_queue = BatchQueue(self) if config.async_scheduling else None
        # quiet decode stretches as one DecodeRun (advance(), run()); async scheduling (its
        # batch queue overlaps steps) and every policy but vLLM V1's go one step at a time
        self.fast_forward = (fast_forward and self.batch_queue is None
                             and type(self.scheduler) is VllmV1Scheduler)

    def _arrival_key(self, spec: RequestSpec) -> float:
        return float(spec.arrival_step or 0) if self.step_clock else (spec.arrival_s or 0.0)

    @property
    def kv(self) -> KVCacheManager:
        return self.scheduler.kv

    @property
    def done(self) -> bool:
        return not self._pending and not self.scheduler.has_unfinished

    def run(self) -> Iterator[StepRecord]:
        """Every step's record, decode runs expanded: the same stream as step() gives."""
        while (item := self.advance()) is not None:
            if isinstance(item, DecodeRun):
                yield from item.records()
            else:
                yield item

    def run_to_end(self) -> int:
        """Simulate to the end without building records (for a summary); the step count."""
        num_steps = 0
        while steps := self.advance_unrecorded():
            num_steps += steps
        return num_steps

    def advance_unrecorded(self, max_steps: int | None = None) -> int:
        """advance() without its record or block events (for callers that read neither): how
        many steps it took (a quiet stretch cut at `max_steps`), 0 at the end."""
        if self.batch_queue is not None:  # its records carry what its next steps need
            return 0 if self.step() is None else 1
        pool = self.kv.pool
        pool.record_events = False
        try:
            plan = fast_forward.plan_run(self) if self._quiet() else None
            if plan is not None and max_steps is not None and len(plan[1]) > max_steps:
                start, step_ms, clock = plan
                plan = (start, step_ms[:max_steps], clock[:max_steps + 1])
            if plan is not None:
                steps = fast_forward.apply_run(self, plan, record=False)
                assert isinstance(steps, int)
                return steps
            return 1 if self._step_unrecorded() else 0
        finally:
            pool.record_events = True

    def advance(self) -> StepRecord | DecodeRun | None:
        """The next step, or the quiet stretch of decode steps that starts here, as one run."""
        assert self.records, "an Engine(records=False) makes no records"
        plan = fast_forward.plan_run(self) if self._quiet() else None
        if plan is not None:
            run = fast_forward.apply_run(self, plan)
            assert isinstance(run, DecodeRun)
            return run
        return self.step()

    def _quiet(self) -> bool:
        return self.fast_forward and bool(self.scheduler.running) and not self.scheduler.waiting

    def step(self) -> StepRecord | None:
        assert not isinstance(self.kv, CountingKVCacheManager), "records=False: no block ids"
        if self.batch_queue is not None:
            return self.batch_queue.step()
        planned = self._schedule()
        if planned is None:
            return None
        output, arrivals, rejected = planned
        running = tuple(self.scheduler.running.ids)
        waiting = self.scheduler.waiting.ids
        step_time_ms = self._price(output)
        finished = self._apply(output, step_time_ms)
        record = self._record(output, tuple(arrivals), tuple(rejected), finished, running,
                              waiting, step_time_ms)
        self._tick(step_time_ms)
        return record

    def _step_unrecorded(self) -> bool:
        """step() without its record (run_to_end); False at the end."""
        planned = self._schedule()
        if planned is None:
            return False
        step_time_ms = self._price(planned[0], recorded=False)
        self._apply(planned[0], step_time_ms)
        self.kv.pool.drain()
        self._add_waste(self.kv.waste(self.scheduler.running))
        self._tick(step_time_ms)
        return True

    def _schedule(self) -> tuple[SchedulerOutput, list[str], list[tuple[str, str]]] | None:
        """Admit what has arrived and schedule the next step (jumping idle time); None: done."""
        if self.done:
            return None
        arrivals: list[str] = []
        rejected: list[tuple[str, str]] = []
        while True:
            if not self.scheduler.has_unfinished:
                self._jump_to_next_arrival()
            self._add_arrivals(arrivals, rejected)
            self.scheduler.more_arrivals = bool(self._pending)
            self.scheduler.now_s = self.time_s
            output = self.scheduler.schedule()
            if output.entries or output.preempted or not self.scheduler.has_unfinished:
                return output, arrivals, rejected
            if not self._pending:
                self._reject_stuck(rejected)
                return output, arrivals, rejected
            self._jump_to_next_arrival(force=True)

    def _tick(self, step_time_ms: float) -> None:
        self.step_no += 1
        self.iter += 1
        self.time_s += step_time_ms / 1000.0

    def _add_waste(self, waste: dict[str, int]) -> None:
        totals = self.waste_totals
        for key, value in waste.items():
            totals[key] = totals.get(key, 0) + value

    def summary(self) -> dict[str, Any]:
        return metrics.summarize(self.done_requests, self.time_s, self.rejected,
                                 self.waste_totals, self.config.frontend_overhead_ms or 0.0)

    def request_metrics(self) -> list[dict[str, Any]]:
        frontend = self.config.frontend_overhead_ms or 0.0
        return [metrics.request_metrics(r, frontend) for r in self.done_requests]

    def _jump_to_next_arrival(self, force: bool = False) -> None:
        """Move the workload's clock to the next arrival (when forced, at least one step on, or
        on the time clock to the policy's own wake-up if that comes first)."""
        spec = self._pending[0]
        if force and self.step_clock:
            self.step_no = max(self.step_no + 1, spec.arrival_step or 0)
            return
        if self.step_clock:
            self.step_no = max(self.step_no, spec.arrival_step or 0)
            return
        target = spec.arrival_s or 0.0
        wake = self.scheduler.wake_s() if force else None
        if wake is not None and self.time_s < wake < target:
            target = wake
        self.time_s = max(self.time_s, target)

    def _add_arrivals(self, arrivals: list[str], rejected: list[tuple[str, str]]) -> None:
        now = self.step_no if self.step_clock else self.time_s
        while self._pending and self._arrival_key(self._pending[0]) <= now:
            spec = self._pending.popleft()
            arrivals.append(spec.id)
            reason = self._rejection(spec)
            if reason:
                rejected.append((spec.id, reason))
                self.rejected.append((spec.id, reason))
                continue
            arrival_time = self.time_s if self.step_clock else (spec.arrival_s or 0.0)
            self.scheduler.add_request(Request(spec, self._num_arrived, arrival_time,
                                               self.step_end_s))
            self._num_arrived += 1

    def _reject_stuck(self, rejected: list[tuple[str, str]]) -> None:
        """Waiting requests that no future step can admit: refuse them instead of looping."""
        for request in list(self.scheduler.waiting):
            reason = "can never be scheduled under this policy and cache size"
            self.scheduler.waiting.remove(request)
            del self.scheduler.requests[request.id]
            request.status = RequestStatus.REJECTED
            rejected.append((request.id, reason))
            self.rejected.append((request.id, reason))

    def _rejection(self, spec: RequestSpec) -> str | None:
        if spec.prompt_len < 1 or spec.output_len < 1:
            return "prompt_len and output_len must be at least 1"
        unfit = self.unfit(spec)
        if unfit is not None and unfit[0] == "max_model_len":
            return unfit[1]
        if spec.id in self.scheduler.requests:
            return "duplicate request id"
        return None if unfit is None else unfit[1]

    def unfit(self, spec: RequestSpec) -> tuple[str, str] | None:
        """Why this config can never run `spec`: ("max_model_len" | "kv", why), else None."""
        total = spec.prompt_len + spec.output_len
        if self.config.max_model_len is not None and total > self.config.max_model_len:
            limit = self.config.max_model_len
            return "max_model_len", (f"prompt + output = {total} tokens exceeds max_model_len "
                                     f"{limit}")
        reservation = self.kv.reservation_tokens(spec.prompt_len, spec.output_len)
        blocks = cdiv(reservation, self.config.block_size)
        usable = self.kv.pool.num_usable_blocks
        if blocks > usable:
            return "kv", f"needs {blocks} KV blocks but the cache has only {usable}"
        return None

    def _price(self, output: SchedulerOutput, recorded: bool = True) -> float:
        """The step's time from its scheduled columns (which a record reuses), or unrecorded
        from the two it is priced from."""
        if not output.entries:
            return 0.0
        if not recorded:
            return float(self.step_time(*output.shape()))
        columns = output.columns()
        return float(self.step_time(columns.n, columns.start))

    def _apply(self, output: SchedulerOutput, step_time_ms: float) -> tuple[str, ...]:
        end_s = self.time_s + step_time_ms / 1000.0
        self.step_end_s.append(end_s)
        finished = self.scheduler.update_from_output(output, self.iter)
        for request in finished:
            request.finish_time = end_s
        self.done_requests.extend(map(FinishedRequest, finished))
        return tuple(r.id for r in finished)

    def _record(self, output: SchedulerOutput, arrivals: tuple[str, ...],
                rejected: tuple[tuple[str, str], ...], finished: tuple[str, ...],
                running: tuple[str, ...], waiting: tuple[str, ...],
                step_time_ms: float) -> StepRecord:
        events, freed = self.kv.pool.drain()
        waste = self.kv.waste(self.scheduler.running)
        self._add_waste(waste)
        return StepRecord(
            step=self.step_no, iter=self.iter, time_s=self.time_s, step_time_ms=step_time_ms,
            arrivals=arrivals, columns=output.columns(), new=tuple(output.new),
            resumed=tuple(output.resumed), preempted=tuple(output.preempted), finished=finished,
            released=tuple(self.scheduler.released),
            rejected=rejected, new_blocks=output.new_blocks, freed_blocks=tuple(freed),
            block_events=tuple(events), num_cached_tokens=output.num_cached_tokens,
            running=running, waiting=waiting, num_free_blocks=self.kv.num_free_blocks,
            num_usable_blocks=self.kv.pool.num_usable_blocks,
            token_budget=self.scheduler.step_token_budget(output),
            max_num_seqs=self.config.max_num_seqs,
            kv_waste=waste,
        )
