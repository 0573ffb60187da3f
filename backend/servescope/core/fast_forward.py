"""Fast-forward: a quiet stretch of decode steps (nobody due to arrive, nothing waiting, every
running request decoding one token a step) planned and applied at once, as one DecodeStretch
(Engine.advance: next_stretch), or as a bare count of steps when nobody reads the records
(Engine.advance_unrecorded under synchronous scheduling: run_to_end, a scout)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

from servescope.core.arrivals import Arrivals
from servescope.core.clock import Clock
from servescope.core.config import EngineConfig
from servescope.core.decode_stretch import DecodeStretch
from servescope.core.kv_cache_manager import KVCacheManager, PagedKVCacheManager
from servescope.core.request import FinishedRequest
from servescope.core.scheduler.base import Scheduler
from servescope.core.step_time import StepTimeFn, decode_steps_ms

MIN_RUN_STEPS = 2  # a one-step run costs more than the step
FIRST_CHUNK_STEPS = 8  # priced_until's first chunk (then 16, 32, ...): a few scrapes' steps
Plan = tuple[np.ndarray, np.ndarray, np.ndarray]  # start, step times (ms), clock (num_steps + 1)


class Engine(Protocol):
    """What fast-forward reads and advances of the engine (core/engine.py's Engine)."""

    config: EngineConfig
    scheduler: Scheduler
    clock: Clock
    arrivals: Arrivals
    step_time: StepTimeFn
    done_requests: list[FinishedRequest]
    fast_forward: bool  # (synchronous scheduling, vLLM V1's policy)

    @property
    def kv(self) -> KVCacheManager: ...

    def add_waste(self, waste: dict[str, int]) -> None: ...


def next_stretch(engine: Engine) -> DecodeStretch | None:
    """Engine.advance's quiet stretch from here, applied, as one run (None: none starts here)."""
    plan = plan_stretch(engine) if quiet(engine) else None
    if plan is None:
        return None
    run = apply_stretch(engine, plan)
    assert isinstance(run, DecodeStretch)
    return run


def advance_unrecorded(engine: Engine, max_steps: int | None, step: Callable[[], bool]) -> int:
    """Engine.advance_unrecorded under synchronous scheduling, its pool raising no block
    events: the quiet stretch from here (cut at `max_steps`), else `step` (the engine's step
    without its record; False at the end): how many steps."""
    pool = engine.kv.pool
    pool.record_events = False
    try:
        plan = plan_stretch(engine) if quiet(engine) else None
        if plan is None:
            return int(step())
        if max_steps is not None:
            plan = cut(plan, max_steps)
        steps = apply_stretch(engine, plan, record=False)
        assert isinstance(steps, int)
        return steps
    finally:
        pool.record_events = True


def apply_unrecorded(engine: Engine, plan: Plan) -> None:
    """Apply a planned stretch as advance_unrecorded does (no records, no block events)."""
    pool = engine.kv.pool
    pool.record_events = False
    try:
        apply_stretch(engine, plan, record=False)
    finally:
        pool.record_events = True


def cut(plan: Plan, num_steps: int) -> Plan:
    """The plan's first `num_steps` steps."""
    start, step_ms, clock = plan
    return start, step_ms[:num_steps], clock[:num_steps + 1]


def quiet(engine: Engine) -> bool:
    """Whether a stretch may start here: fast-forward on, and every request running."""
    scheduler = engine.scheduler
    return engine.fast_forward and bool(scheduler.running) and not scheduler.waiting


def stretch_bound(engine: Engine, past_gate: bool = False) -> tuple[int, float | None] | None:
    """How many quiet steps may follow from here (ending at the first finish or where the free
    blocks run out: the scheduler bounds those, and on the step clock the next arrival) and
    the time of the next arrival, which no step of the stretch starts at or after (None: none
    comes; `past_gate`: a fleet's gate is none). None when no stretch of two steps starts."""
    clock, arrivals = engine.clock, engine.arrivals
    pending = arrivals.pending[0] if arrivals.pending else None
    if past_gate and pending is arrivals.gate:
        pending = None
    if pending is not None and arrivals.key(pending) <= (
            clock.step_no if clock.step_clock else clock.time_s):
        return None
    num_steps = engine.scheduler.quiet_decode_steps()
    if pending is not None and clock.step_clock:
        num_steps = min(num_steps, (pending.arrival_step or 0) - clock.step_no)
    if num_steps < MIN_RUN_STEPS:
        return None
    return num_steps, None if pending is None or clock.step_clock else (pending.arrival_s or 0.0)


def plan_stretch(engine: Engine) -> Plan | None:
    """The quiet steps from here (see stretch_bound); None when under two steps."""
    bound = stretch_bound(engine)
    if bound is None:
        return None
    num_steps, due_s = bound
    clock, running = engine.clock, engine.scheduler.running
    start = running.num_computed[:len(running)].copy()
    step_ms = priced_until(engine.step_time, start, num_steps, clock.time_s, due_s)
    num_steps = len(step_ms)
    ends = np.add.accumulate(np.concatenate(([clock.time_s], step_ms / 1000.0)))
    if due_s is not None:  # it arrives at the first step it is due
        num_steps = 1 + int(ends[1:num_steps].searchsorted(due_s))
        if num_steps < MIN_RUN_STEPS:
            return None
    return start, step_ms[:num_steps], ends[:num_steps + 1]


def priced_until(step_time: StepTimeFn, start: np.ndarray, num_steps: int, time_s: float,
                 due_s: float | None) -> np.ndarray:
    """The stretch's step times, priced in doubling chunks that stop once the steps reach
    `due_s` (the next arrival, or a fleet's gate: core/fleet.py moves one every scrape, so a
    stretch there is a few steps of the hundreds the running requests could take)."""
    if due_s is None:
        return decode_steps_ms(step_time, start, num_steps)
    chunks: list[np.ndarray] = []
    priced, chunk, end_s = 0, FIRST_CHUNK_STEPS, time_s
    while priced < num_steps and end_s < due_s:
        part = decode_steps_ms(step_time, start + priced, min(chunk, num_steps - priced))
        chunks.append(part)
        priced += len(part)
        end_s += float(part.sum()) / 1000.0
        chunk *= 2
    return np.concatenate(chunks) if chunks else np.zeros(0)


def apply_stretch(engine: Engine, plan: Plan, record: bool = True) -> DecodeStretch | int:
    """Advance the engine over the planned steps: their run (or, unrecorded, their count)."""
    start, step_ms, clock = plan
    kv, scheduler, num_steps = engine.kv, engine.scheduler, len(step_ms)
    assert isinstance(kv, PagedKVCacheManager)
    num_rows, ids = len(start), tuple(scheduler.running.ids) if record else ()
    num_free, num_table = kv.num_free_blocks, kv.num_table_blocks
    blocks, finished = scheduler.advance_decodes(num_steps, engine.clock.iter, record)
    end_s = float(clock[-1])
    engine.clock.step_end_s.frombytes(clock[1:].tobytes())
    for request in finished:
        request.finish_time = end_s
    engine.done_requests.extend(map(FinishedRequest, finished))
    events, freed = kv.pool.drain()
    assert not events, "a decode stretch raises its events in its records"
    last = kv.waste(scheduler.running)  # the last step's, after finishing
    if not record:
        engine.add_waste(waste_sums(kv, num_free, num_table, start.tolist(), num_steps, last))
        engine.clock.tick_many(num_steps, end_s)
        return num_steps
    taken = np.cumsum(np.bincount(blocks.steps, minlength=num_steps))
    free = num_free - taken
    free[-1] = kv.num_free_blocks
    computed = int(start.sum()) + num_rows * np.arange(1, num_steps + 1)
    waste = kv.waste_of(num_table + taken, computed, free)
    for key, value in last.items():
        waste[key][-1] = value
    engine.add_waste({key: int(waste[key].sum()) for key in last})
    config = engine.config
    run = DecodeStretch(engine.clock.step_no, engine.clock.iter, clock, step_ms, ids, start, blocks,
                    free, waste, tuple(r.id for r in finished), tuple(freed),
                    kv.pool.num_usable_blocks, config.max_num_batched_tokens, config.max_num_seqs)
    engine.clock.tick_many(num_steps, end_s)
    return run


def waste_sums(kv: PagedKVCacheManager, num_free: int, num_table: int, starts: list[int],
               num_steps: int, last: dict[str, int]) -> dict[str, int]:
    """waste_of summed over the run's steps but the last (whose own value is `last`), in
    closed form: step j has taken the blocks of steps 0..j and computed start + j + 1. A row
    at p takes a block at steps s0 + m * block_size (s0 = -p mod block_size); one taken at
    step s counts in the head - s steps s..head - 1."""
    head, bs = num_steps - 1, kv.block_size
    taken = 0  # (plain Python: a batch is small, a numpy sum costs more)
    for p in starts:
        first = -p % bs
        if first < head:
            m = (head - first - 1) // bs + 1
            taken += m * (head - first) - bs * m * (m - 1) // 2
    computed = head * sum(starts) + len(starts) * head * (head + 1) // 2
    internal = (head * num_table + taken) * bs - computed
    used = head * (kv.pool.num_usable_blocks - num_free) + taken
    sums = {"token_states": used * bs - internal, "reserved": 0,
            "internal_fragmentation": internal, "external_fragmentation": 0}
    return {key: sums[key] + value for key, value in last.items()}
