"""Fast-forward under async scheduling, for runs nobody reads the records of (a scout running
ahead, a leap getting to its first record): a quiet stretch of the batch queue's pairs applied
at once. Pair j plans step N + 1 + j and updates step N + j (core/batch_queue.py); while nobody
arrives, nothing waits and every running request decodes one token a step with one in flight,
b pairs change the cache and the batch as b synchronous decode steps from the same positions
would, except that the last step's tokens are not known yet (nor cached). Step N + b is left in
flight as planned, so the engine's next step() updates it as if each pair had been taken alone
(tests/core/test_async_fast_forward.py)."""

from __future__ import annotations

from typing import Protocol

import numpy as np

from servescope.core import fast_forward
from servescope.core.batch_queue import BatchQueue, Flight
from servescope.core.kv_cache_manager import PagedKVCacheManager
from servescope.core.records import StepRecord
from servescope.core.running_batch import RunningBatch
from servescope.core.scheduler.base import DecodeChunk, SchedulerOutput
from servescope.core.step_time import decode_steps_ms


class Engine(fast_forward.Engine, Protocol):
    batch_queue: BatchQueue | None
    fast_forward_async: bool

    def step(self) -> StepRecord | None: ...


def advance_unrecorded(engine: Engine, max_steps: int | None) -> int:
    """Engine.advance_unrecorded under async scheduling: the quiet pairs from here (at most
    max_steps - 1), then one step as it comes; how many steps, 0 at the end."""
    pool = engine.kv.pool
    pool.record_events = False
    try:
        skipped = skip_pairs(engine, (max_steps or 1 << 62) - 1) if engine.fast_forward_async \
            else 0
    finally:
        pool.record_events = True
    return skipped + (engine.step() is not None)


def quiet_pairs(engine: Engine, max_pairs: int) -> tuple[int, np.ndarray, np.ndarray]:
    """How many pairs from here are quiet (0 when under fast_forward.MIN_RUN_STEPS), with the
    plans' step times (ms) and the updated steps' ends (s)."""
    none = 0, np.zeros(0), np.zeros(0)
    queue, scheduler, kv = engine.batch_queue, engine.scheduler, engine.kv
    flight = queue.in_flight if queue is not None else None
    if (flight is None or queue is None or queue.arrivals or queue.rejected or scheduler.waiting
            or not isinstance(kv, PagedKVCacheManager)):
        return none
    running, out = scheduler.running, flight.output
    n = len(running)
    if (not n or out.preempted or n > engine.config.max_num_batched_tokens
            or not whole(out, running)):
        return none
    computed, output = running.num_computed[:n], running.num_output[:n]
    if ((running.num_placeholders[:n] != 1).any()
            or (running.prompt_len[:n] + output != computed).any()):
        return none  # not every row a plain decode with its last step's token in flight
    # row r's last token is planned at pair left - 2 and arrives at update left - 1
    pairs = min(max_pairs, int((running.output_len[:n] - output).min()) - 1)
    pairs = kv.decode_steps_fit(computed, max(pairs, 0))
    clock, pending = engine.clock, engine.arrivals.pending
    if pending and clock.step_clock:  # pair j admits the arrivals due at step_no + j
        pairs = min(pairs, (pending[0].arrival_step or 0) - clock.step_no)
    if pairs < fast_forward.MIN_RUN_STEPS:
        return none
    step_ms = decode_steps_ms(engine.step_time, computed, pairs)
    ends = np.add.accumulate(np.concatenate(([flight.end_s], step_ms[:pairs - 1] / 1000.0)))
    if pending and not clock.step_clock:  # pair j admits those due at the end of step N + j - 1
        arrival_s = pending[0].arrival_s or 0.0
        if arrival_s <= clock.time_s:
            return none
        pairs = min(pairs, 1 + int(ends.searchsorted(arrival_s, "left")))
        if pairs < fast_forward.MIN_RUN_STEPS:
            return none
    return pairs, step_ms[:pairs], ends[:pairs]


def whole(plan: SchedulerOutput, running: RunningBatch) -> bool:
    """Whether a plan samples a token of each running request (a last prefill chunk or a
    decode each), so that its update leaves every one a token on."""
    n = len(running)
    if len(plan.entries) == 1 and isinstance(plan.entries[0], DecodeChunk):
        return (plan.entries[0].lo, plan.entries[0].hi) == (0, n)
    columns = plan.columns()
    return (len(columns.ids) == n and bool(columns.sampled.all())
            and set(columns.ids) == set(running.ids[:n]))


def skip_pairs(engine: Engine, max_pairs: int) -> int:
    """Apply the quiet pairs from here without records or events: how many (0: none)."""
    pairs, step_ms, ends = quiet_pairs(engine, max_pairs)
    if not pairs:
        return 0
    scheduler, kv, clock, queue = engine.scheduler, engine.kv, engine.clock, engine.batch_queue
    assert isinstance(kv, PagedKVCacheManager) and queue is not None
    running = scheduler.running
    n = len(running)
    start = running.num_computed[:n].copy()
    num_free, num_table = kv.num_free_blocks, kv.num_table_blocks
    kv.advance_decodes(running.requests, start, pairs, record=False, known_lag=1)
    running.num_computed[:n] += pairs
    assert not running.sample_chunk(0, n, clock.iter, pairs), "quiet pairs finish nobody"
    clock.step_end_s.frombytes(ends.tobytes())
    last = kv.waste(running)
    engine.add_waste(fast_forward.waste_sums(kv, num_free, num_table, start, pairs, last))
    clock.tick_many(pairs, float(ends[-1]))
    plan = SchedulerOutput(entries=[DecodeChunk(0, n, running.ids[:n], start + pairs - 1)])
    queue.in_flight = Flight(plan, clock.step_no - 1, float(ends[-1]), float(step_ms[-1]), (),
                             (), tuple(running.ids), ())
    return pairs
