"""Steps in flight, and the record of one once it is applied. A step is scheduled and priced
as a Flight; both engine loops (core/engine.py) apply it and record it the same way. Under
async scheduling the engine keeps vLLM's batch queue of depth 2 (vLLM's
`EngineCore.step_with_batch_queue` beside `step`, vllm/v1/engine/core.py):

    schedule 0 | schedule 1, update 0 | schedule 2, update 1 | ...   (one record per update)

Step N + 1 is scheduled while step N runs, so when step N's tokens arrive the next plan already
exists. Step N + 1 starts when step N ends; its arrivals are those due when it is planned (the
start of step N). Record N carries step N's plan and queues, its update's finishes and the
frees and cache events of both, and the free count after its update.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from servescope.core.block_pool import PendingEvent, block_events
from servescope.core.config import EngineConfig
from servescope.core.records import StepRecord
from servescope.core.scheduler.base import Scheduler, SchedulerOutput


@dataclass
class Flight:
    """A step scheduled and priced, its tokens not yet known."""

    output: SchedulerOutput
    step: int
    start_s: float
    step_time_ms: float
    arrivals: tuple[str, ...]
    rejected: tuple[tuple[str, str], ...]
    running: tuple[str, ...]
    waiting: tuple[str, ...]
    events: list[PendingEvent] = field(default_factory=list)  # raised at its schedule (async)
    freed: list[int] = field(default_factory=list)

    @property
    def end_s(self) -> float:
        return self.start_s + self.step_time_ms / 1000.0


class BatchQueue:
    """The step in flight, and the arrivals and refusals joined at a schedule that ran nothing
    (they go with the next step that runs)."""

    def __init__(self) -> None:
        self.in_flight: Flight | None = None
        self.arrivals: list[str] = []
        self.rejected: list[tuple[str, str]] = []

    def take_joined(self) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
        joined = tuple(self.arrivals), tuple(self.rejected)
        self.arrivals, self.rejected = [], []
        return joined


def record(flight: Flight, iter_: int, finished: tuple[str, ...], scheduler: Scheduler,
           config: EngineConfig, waste: dict[str, int]) -> StepRecord:
    """The record of an applied step: its plan and queues, its finishes, the frees and cache
    events since it was scheduled, and the free count now."""
    kv, output = scheduler.kv, flight.output
    events, freed = kv.pool.drain()
    connector = scheduler.connector  # P/D: requests waiting for remote KV are waiting too
    waiting_for_kv, kv_arrived = ((), ()) if connector is None else connector.kv_state()
    return StepRecord(
        step=flight.step, iter=iter_, time_s=flight.start_s,
        step_time_ms=flight.step_time_ms, arrivals=flight.arrivals,
        columns=output.columns(), new=tuple(output.new), resumed=tuple(output.resumed),
        preempted=tuple(output.preempted), finished=finished,
        released=tuple(scheduler.released), rejected=flight.rejected,
        new_blocks=output.new_blocks, freed_blocks=tuple(flight.freed + freed),
        block_events=block_events(flight.events + events),
        num_cached_tokens=output.num_cached_tokens, running=flight.running,
        waiting=flight.waiting + waiting_for_kv, num_free_blocks=kv.num_free_blocks,
        num_usable_blocks=kv.pool.num_usable_blocks,
        token_budget=scheduler.step_token_budget(output),
        max_num_seqs=config.max_num_seqs, kv_waste=waste,
        drafts=None if config.speculative is None else output.drafts,
        accepted=None if config.speculative is None else output.accepted,
        waiting_for_kv=waiting_for_kv, kv_arrived=kv_arrived,
    )
