"""The engine loop under async scheduling: vLLM's batch queue of depth 2.

    schedule 0 | schedule 1, update 0 | schedule 2, update 1 | ...   (one record per update)

Step N + 1 is scheduled while step N runs, so when step N's tokens arrive the next plan already
exists. Step N + 1 starts when step N ends; its arrivals are those due when it is planned (the
start of step N). Record N carries step N's plan and queues, its update's finishes and the
frees and cache events of both, and the free count after its update.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from servescope.core.records import BlockEvent, StepRecord
from servescope.core.request import FinishedRequest
from servescope.core.scheduler.base import SchedulerOutput

if TYPE_CHECKING:
    from servescope.core.engine import Engine


@dataclass
class Flight:
    """A step scheduled and running, its tokens not yet known."""

    output: SchedulerOutput
    step: int
    start_s: float
    step_time_ms: float
    arrivals: tuple[str, ...]
    rejected: tuple[tuple[str, str], ...]
    running: tuple[str, ...]
    waiting: tuple[str, ...]
    events: list[BlockEvent] = field(default_factory=list)
    freed: list[int] = field(default_factory=list)

    @property
    def end_s(self) -> float:
        return self.start_s + self.step_time_ms / 1000.0


class BatchQueue:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.in_flight: Flight | None = None
        self._arrivals: list[str] = []  # joined at a schedule that ran nothing: to the next step
        self._rejected: list[tuple[str, str]] = []

    def step(self) -> StepRecord | None:
        """Schedule the next step, then update the one in flight: its record (None at the end)."""
        engine, scheduler = self.engine, self.engine.scheduler
        while True:
            if engine.done and self.in_flight is None:
                if not (self._arrivals or self._rejected):
                    return None
                # the last arrivals joined at an empty plan and were all refused: say so
                return self._update(self._launch(SchedulerOutput(), engine.time_s))
            if not scheduler.has_unfinished and self.in_flight is None:
                engine._jump_to_next_arrival()
            engine._add_arrivals(self._arrivals, self._rejected)
            scheduler.more_arrivals = bool(engine._pending)
            start_s = self.in_flight.end_s if self.in_flight else engine.time_s
            scheduler.now_s = start_s
            output = scheduler.schedule()
            ran = bool(output.entries or output.preempted)
            flight = self._launch(output, start_s) if ran else None
            previous, self.in_flight = self.in_flight, flight
            if previous is not None:
                if not ran:
                    engine.step_no += 1  # the empty plan used a loop step
                return self._update(previous)
            if ran:
                continue  # the queue fills before any update (schedule 0, schedule 1)
            if engine._pending:
                engine._jump_to_next_arrival(force=True)
                continue
            engine._reject_stuck(self._rejected)
            return self._update(self._launch(output, start_s))

    def _launch(self, output: SchedulerOutput, start_s: float) -> Flight:
        engine, scheduler = self.engine, self.engine.scheduler
        events, freed = engine.kv.pool.drain()  # the preemptions and stores of this schedule
        flight = Flight(output, engine.step_no, start_s, engine._price(output),
                        tuple(self._arrivals), tuple(self._rejected),
                        tuple(scheduler.running.ids), scheduler.waiting.ids, events, freed)
        self._arrivals, self._rejected = [], []
        engine.step_no += 1
        return flight

    def _update(self, flight: Flight) -> StepRecord:
        engine = self.engine
        engine.step_end_s.append(flight.end_s)
        finished = engine.scheduler.update_from_output(flight.output, engine.iter)
        for request in finished:
            request.finish_time = flight.end_s
        engine.done_requests.extend(map(FinishedRequest, finished))
        engine.time_s = max(engine.time_s, flight.end_s)
        record = self._record(flight, tuple(r.id for r in finished))
        engine.iter += 1
        return record

    def _record(self, flight: Flight, finished: tuple[str, ...]) -> StepRecord:
        engine, scheduler, kv = self.engine, self.engine.scheduler, self.engine.kv
        events, freed = kv.pool.drain()
        waste = kv.waste(scheduler.running)
        for key, value in waste.items():
            engine.waste_totals[key] = engine.waste_totals.get(key, 0) + value
        output = flight.output
        return StepRecord(
            step=flight.step, iter=engine.iter, time_s=flight.start_s,
            step_time_ms=flight.step_time_ms, arrivals=flight.arrivals,
            columns=output.columns(), new=tuple(output.new), resumed=tuple(output.resumed),
            preempted=tuple(output.preempted), finished=finished,
            released=tuple(scheduler.released), rejected=flight.rejected,
            new_blocks=output.new_blocks, freed_blocks=tuple(flight.freed + freed),
            block_events=tuple(flight.events + events),
            num_cached_tokens=output.num_cached_tokens, running=flight.running,
            waiting=flight.waiting, num_free_blocks=kv.num_free_blocks,
            num_usable_blocks=kv.pool.num_usable_blocks,
            token_budget=scheduler.step_token_budget(output),
            max_num_seqs=engine.config.max_num_seqs, kv_waste=waste,
        )
