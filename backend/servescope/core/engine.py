"""The engine loop: decide (schedule), price (step time), apply (update, clock); one record a step.

The clocks (core/clock.py) and the requests yet to arrive (core/arrivals.py) are nouns of their
own. When nothing is runnable the clock the workload uses jumps to the next arrival. Under
`async_scheduling` the loop is `step_with_batch_queue` (schedule N + 1, then update N) beside
the synchronous `step`, as in vLLM's EngineCore; both apply and record a step the same way
(core/batch_queue.py). Fast-forward takes quiet stretches of decode steps at once: advance() as
one DecodeStretch (core/fast_forward.py), advance_unrecorded() also under async scheduling
(core/async_fast_forward.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from servescope.core import acceptance, admit, async_fast_forward, cost_model, fast_forward, metrics
from servescope.core import arrivals as admission
from servescope.core.admit import Held
from servescope.core.arrivals import Arrivals
from servescope.core.batch_queue import BatchQueue, Flight, record
from servescope.core.clock import Clock
from servescope.core.config import ConfigError, EngineConfig
from servescope.core.decode_stretch import DecodeStretch
from servescope.core.drafter_cost import SpeculativeStepTime
from servescope.core.kv_cache_manager import KVCacheManager
from servescope.core.kv_counting import CountingKVCacheManager
from servescope.core.records import StepRecord
from servescope.core.request import FinishedRequest, RequestSpec
from servescope.core.scheduler.base import SchedulerOutput
from servescope.core.scheduler.make import make_scheduler
from servescope.core.scheduler.vllm_v1 import VllmV1Scheduler
from servescope.core.scheduler.vllm_v1_async import VllmV1AsyncScheduler
from servescope.core.spec_metrics import SpecCounters
from servescope.core.step_time import StepTimeFn, placeholder_step_time_ms, rows_step_ms


class Engine:
    def __init__(self, config: EngineConfig, requests: Sequence[RequestSpec],
                 step_time: StepTimeFn | None = None, fast_forward: bool = True,
                 records: bool = True, queue_requests: bool = True) -> None:
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
        # drafts accepted where a request carries no spec_accepted list (core/acceptance.py)
        self.acceptance, self.acceptance_source = acceptance.for_engine(config.speculative,
                                                                        requests)
        self.spec_counters = SpecCounters() if config.speculative is not None else None
        step_clock = all(s.arrival_step is not None for s in requests)
        self.clock = Clock(step_clock)
        # queue_requests=False: a fleet's replica, which holds only what its router sends it
        # (the requests still choose the scheduler's KV manager and the acceptance model)
        self.arrivals = Arrivals(requests if queue_requests else (), step_clock)
        self.done_requests: list[FinishedRequest] = []
        self.rejected: list[tuple[str, str]] = []
        self.num_arrived = 0
        self.waste_totals: dict[str, int] = {}
        self.batch_queue = BatchQueue() if config.async_scheduling else None
        self.held: Held | None = None  # a plan paused at a fleet's gate (core/admit.py)
        # quiet decode stretches at once, under vLLM V1's policy only; under async scheduling
        # (its batch queue overlaps steps) only unrecorded (core/async_fast_forward.py); with
        # speculative decoding every step is its own (each decode is 1 + drafts tokens)
        fast_forward = fast_forward and config.speculative is None
        self.fast_forward = (fast_forward and self.batch_queue is None
                             and type(self.scheduler) is VllmV1Scheduler)
        self.fast_forward_async = fast_forward and type(self.scheduler) is VllmV1AsyncScheduler

    # the clocks, as the engine's readers know them
    step_clock = property(lambda self: self.clock.step_clock)
    step_no = property(lambda self: self.clock.step_no)
    time_s = property(lambda self: self.clock.time_s)
    iter = property(lambda self: self.clock.iter)
    step_end_s = property(lambda self: self.clock.step_end_s)

    @property
    def acceptance(self) -> Any:
        """The acceptance model asked for drafts accepted at a verify step when a request has
        no spec_accepted list (None: 0 accepted); the scheduler holds it."""
        return self.scheduler.acceptance

    @acceptance.setter
    def acceptance(self, model: Any) -> None:
        self.scheduler.acceptance = model

    @property
    def kv(self) -> KVCacheManager:
        return self.scheduler.kv

    @property
    def done(self) -> bool:
        return not self.arrivals.pending and not self.scheduler.has_unfinished

    def run(self) -> Iterator[StepRecord]:
        """Every step's record, decode stretches expanded: the same stream as step() gives."""
        while (item := self.advance()) is not None:
            yield from item.records() if isinstance(item, DecodeStretch) else (item,)

    def run_to_end(self) -> int:
        """Simulate to the end without building records (for a summary); the step count."""
        return sum(iter(self.advance_unrecorded, 0))  # (advances until one takes no step)

    def advance_unrecorded(self, max_steps: int | None = None) -> int:
        """advance() without its record or block events (for callers that read neither): how
        many steps it took (a quiet stretch cut at `max_steps`), 0 at the end."""
        if self.batch_queue is not None:  # quiet and finishing pairs at once, then one step
            # (whose plan keeps its block events: the next step or a checkpoint may record it)
            return async_fast_forward.skip_unrecorded(self, max_steps) + self._step_unrecorded()
        return fast_forward.advance_unrecorded(self, max_steps, self._step_unrecorded)

    def advance(self) -> StepRecord | DecodeStretch | None:
        """The next step, or the quiet stretch of decode steps that starts here, as one run."""
        assert self.records, "an Engine(records=False) makes no records"
        run = fast_forward.next_stretch(self)
        return run if run is not None else self.step()

    def step(self) -> StepRecord | None:
        assert not isinstance(self.kv, CountingKVCacheManager), "records=False: no block ids"
        if self.batch_queue is not None:
            return self.step_with_batch_queue(self.batch_queue)
        planned = admit.plan_sync(self)
        if planned is None:
            return None
        output, arrivals, rejected = planned
        flight = self._launch(output, self.clock.time_s, tuple(arrivals), tuple(rejected))
        return self._update(flight)

    def step_with_batch_queue(self, queue: BatchQueue, hold: bool = False) -> StepRecord | None:
        """Schedule the next step, then update the one in flight: its record (None at the
        end). See core/batch_queue.py for the order of events. `hold`: update the step in
        flight without scheduling the next (a leap reads the state its record leaves)."""
        flight = self._next_update(queue, hold)
        return None if flight is None else self._update(flight)

    def _next_update(self, queue: BatchQueue, hold: bool = False,
                     recorded: bool = True) -> Flight | None:
        """step_with_batch_queue up to the update: the step to update (None at the end, or
        paused at a fleet's gate); unrecorded, the steps it plans keep no columns (price)."""
        clock = self.clock
        waiting = self.held[2] if self.held else None  # an empty plan a gate paused
        self.held = None
        while True:
            if hold and queue.in_flight is not None:
                held, queue.in_flight = queue.in_flight, None
                return held
            if waiting is None:
                if self.done and queue.in_flight is None:
                    if not (queue.arrivals or queue.rejected):
                        return None
                    # the last arrivals joined at an empty plan and were all refused: say so
                    return self._launch(SchedulerOutput(), clock.time_s, *queue.take_joined())
                idle = not self.scheduler.has_unfinished and queue.in_flight is None
                if (idle and not admit.jump(self)) or self.arrivals.gate_due(admit.now(self)):
                    self.held = queue.arrivals, queue.rejected, None
                    return None
                output, previous = self._plan_next(queue, recorded)
                ran = queue.in_flight is not None
                if previous is not None:
                    clock.step_no += not ran  # the empty plan used a loop step
                    return previous
                if ran:
                    continue  # the queue fills before any update (schedule 0, schedule 1)
                waiting = output
            # an empty plan, nothing in flight: on to the next arrival, or refuse the stuck
            if not self.arrivals.pending:
                admit.reject_stuck(self, queue.rejected)
                return self._launch(waiting, clock.time_s, *queue.take_joined())
            if not admit.jump(self, force=True):
                self.held = queue.arrivals, queue.rejected, waiting
                return None
            waiting = None

    def _plan_next(self, queue: BatchQueue,
                   recorded: bool) -> tuple[SchedulerOutput, Flight | None]:
        """Admit what is due and plan the step after the one in flight (which it replaces
        there only if it runs): the plan, and the step it replaced (None if none)."""
        scheduler = self.scheduler
        admit.admit_due(self, queue.arrivals, queue.rejected)
        scheduler.more_arrivals = bool(self.arrivals.pending)
        start_s = queue.in_flight.end_s if queue.in_flight else self.clock.time_s
        scheduler.now_s = start_s
        output = scheduler.schedule()
        ran = bool(output.entries or output.preempted)
        flight = (self._launch(output, start_s, *queue.take_joined(), recorded=recorded)
                  if ran else None)
        previous, queue.in_flight = queue.in_flight, flight
        return output, previous

    def _launch(self, output: SchedulerOutput, start_s: float, arrivals: tuple[str, ...],
                rejected: tuple[tuple[str, str], ...], recorded: bool = True) -> Flight:
        """The step `output` plans, priced, starting at `start_s`; under async scheduling it
        keeps the events its schedule raised (the sync step drains them with its update's)."""
        scheduler = self.scheduler
        events, freed = ([], []) if self.batch_queue is None else self.kv.pool.drain()
        flight = Flight(output, self.clock.step_no, start_s, self.price(output, recorded),
                        arrivals, rejected, tuple(scheduler.running.ids), scheduler.waiting.ids,
                        events, freed)
        if self.batch_queue is not None:
            self.clock.step_no += 1
        return flight

    def _update(self, flight: Flight, recorded: bool = True) -> StepRecord | None:
        """Apply a step's output and record it (unrecorded: drop what its record would take);
        the sync loop's clock ticks after."""
        finished = self.apply_output(flight.output, flight.end_s)
        waste = self.kv.waste(self.scheduler.running)
        self.add_waste(waste)
        rec = None
        if recorded:
            rec = record(flight, self.clock.iter, finished, self.scheduler, self.config, waste)
        else:
            self.kv.pool.drain()
        if self.batch_queue is None:
            self.clock.tick(flight.step_time_ms)
        else:
            self.clock.time_s = max(self.clock.time_s, flight.end_s)
            self.clock.iter += 1
        return rec

    def _step_unrecorded(self) -> bool:
        """step() without its record (run_to_end); False at the end."""
        if self.batch_queue is not None:
            flight = self._next_update(self.batch_queue, recorded=False)
            if flight is not None:
                self._update(flight, recorded=False)
            return flight is not None
        planned = admit.plan_sync(self)
        if planned is None:
            return False
        step_time_ms = self.price(planned[0], recorded=False)
        self.apply_output(planned[0], self.clock.time_s + step_time_ms / 1000.0)
        self.kv.pool.drain()
        self.add_waste(self.kv.waste(self.scheduler.running))
        self.clock.tick(step_time_ms)
        return True

    def add_waste(self, waste: dict[str, int]) -> None:
        totals = self.waste_totals
        for key, value in waste.items():
            totals[key] = totals.get(key, 0) + value

    def summary(self) -> dict[str, Any]:
        summary = metrics.summarize(self.done_requests, self.clock.time_s, self.rejected,
                                    self.waste_totals, self.config.frontend_overhead_ms or 0.0)
        if self.spec_counters is not None:
            summary.update(self.spec_counters.summary(),
                           acceptance_source=self.acceptance_source)
        return summary

    def request_metrics(self) -> list[dict[str, Any]]:
        frontend = self.config.frontend_overhead_ms or 0.0
        return [metrics.request_metrics(r, frontend) for r in self.done_requests]

    def add_request(self, spec: RequestSpec) -> None:
        """A request joining while the engine runs (a fleet's router sent it), arriving no
        earlier than the ones it holds and no earlier than the engine's gate."""
        self.arrivals.add(spec)

    def unfit(self, spec: RequestSpec) -> tuple[str, str] | None:
        """Why this config can never run `spec`: ("max_model_len" | "kv", why), else None."""
        return admission.unfit(spec, self.config, self.kv)

    def price(self, output: SchedulerOutput, recorded: bool = True) -> float:
        """The step's time from its scheduled columns (which a record reuses), or unrecorded
        from the two lists it is priced from (core/step_time.py rows_step_ms)."""
        if not output.entries:
            return 0.0
        if not recorded and not output.drafts:
            return rows_step_ms(self.step_time, *output.shape())
        n, start = output.columns().n, output.columns().start
        if output.drafts and isinstance(self.step_time, SpeculativeStepTime):
            return float(self.step_time(n, start, sum(output.drafts.values())))
        return float(self.step_time(n, start))

    def apply_output(self, output: SchedulerOutput, end_s: float) -> tuple[str, ...]:
        """The step's update (its tokens), ending at `end_s`: the requests it finished."""
        self.clock.step_end_s.append(end_s)
        finished = self.scheduler.update_from_output(output, self.clock.iter)
        counters = self.spec_counters
        if counters is not None:
            counters.observe(output.drafts, output.accepted)
        for request in finished:
            request.finish_time = end_s
            done = FinishedRequest(request)
            if counters is not None:
                done.drafts, done.accepted = counters.take(request.id)
            self.done_requests.append(done)
        return tuple(r.id for r in finished)
