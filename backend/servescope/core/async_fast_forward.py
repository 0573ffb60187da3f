"""Fast-forward under async scheduling, for runs nobody reads the records of (a scout running
ahead, a leap getting to its first record): quiet stretches of the batch queue's pairs applied
at once, and the finishing pair after each. Pair j plans step N + 1 + j and updates step N + j
(core/batch_queue.py); while nobody arrives, nothing waits and every running request decodes
one token a step with one in flight, b pairs change the cache and the batch as b synchronous
decode steps from the same positions would, except that the last step's tokens are not known
yet (nor cached). When some rows' last tokens are in flight, the next pair plans the others
alone and its update finishes them (finish_pair). The last step is left in flight as planned,
so the engine's next step() updates it as if each pair had been taken alone
(tests/core/test_async_fast_forward.py)."""

from __future__ import annotations

import math
from array import array
from operator import add, sub
from typing import Protocol

import numpy as np

from servescope.core import fast_forward
from servescope.core.batch_queue import BatchQueue, Flight
from servescope.core.kv_cache_manager import PagedKVCacheManager
from servescope.core.running_batch import RunningBatch
from servescope.core.scheduler.base import DecodeChunk, SchedulerOutput
from servescope.core.step_time import StepTimeFn, decode_steps_ms

# Unlike a synchronous stretch (fast_forward.MIN_RUN_STEPS), one pair taken here costs no more
# than the async step it replaces (bench/async_speed.py --run-ahead 6000: async/sync 1.55 with
# 1, 1.58 with 2, interleaved on the 2-core machine)
MIN_PAIRS = 1
# Pairs up to which a cost model's decode_pricer prices them one by one in Python even with no
# arrival to stop at: below where that costs as much as decode_steps_ms's numpy calls (timeit
# of stretch_times, 12 rows: 2.6 us for 1 pair, 8.4 for 32, 14.5 for 64; numpy ~10 us)
MAX_PRICED_ONE_BY_ONE = 32


class Engine(fast_forward.Engine, Protocol):
    batch_queue: BatchQueue | None
    fast_forward_async: bool

    def apply_output(self, output: SchedulerOutput, end_s: float) -> tuple[str, ...]: ...


def skip_unrecorded(engine: Engine, max_steps: int | None) -> int:
    """Engine.advance_unrecorded under async scheduling, before its one step as it comes: the
    quiet and finishing pairs from here (at most max_steps - 1), without block events."""
    pool = engine.kv.pool
    pool.record_events = False
    try:
        return skip(engine, (max_steps or 1 << 62) - 1) if engine.fast_forward_async else 0
    finally:
        pool.record_events = True


def skip(engine: Engine, max_pairs: int) -> int:
    """Quiet stretches of pairs, each with the finishing pair after it, while they come: how
    many pairs (at most max_pairs)."""
    done = 0
    if not quiet_batch(engine):
        return 0
    while done < max_pairs:  # (the batch stays quiet through skip_pairs and finish_pair)
        done += skip_pairs(engine, max_pairs - done)
        if done >= max_pairs or not finish_pair(engine):
            break
        done += 1
    return done


def quiet_batch(engine: Engine) -> bool:
    """Whether the next pair plans every running request one decode token with nothing else
    to admit: nothing joined or waiting, the plan in flight samples each (and only) running
    request and preempted nobody, every row a plain decode with its last step's token in flight."""
    queue, scheduler = engine.batch_queue, engine.scheduler
    flight = queue.in_flight if queue is not None else None
    if (flight is None or queue is None or queue.arrivals or queue.rejected or scheduler.waiting
            or not isinstance(engine.kv, PagedKVCacheManager)):
        return False
    running, out = scheduler.running, flight.output
    n = len(running)
    if (not n or out.preempted or n > engine.config.max_num_batched_tokens
            or not whole(out, running)):
        return False
    # (plain Python: a batch is small, and numpy calls cost more than its rows)
    return bool(running.num_placeholders[:n].tolist().count(1) == n
                and list(map(add, running.prompt_len[:n].tolist(),
                             running.num_output[:n].tolist())) == running.num_computed[:n].tolist())


def quiet_pairs(engine: Engine, starts: list[int],
                max_pairs: int) -> tuple[int, float, array[float]]:
    """How many pairs from here (the batch quiet: quiet_batch, its rows at `starts`) are quiet
    (0 when under MIN_PAIRS), with the last plan's step time (ms) and the updated steps' ends
    (s)."""
    none = 0, 0.0, array("d")
    queue, running, kv = engine.batch_queue, engine.scheduler.running, engine.kv
    assert queue is not None and queue.in_flight is not None
    assert isinstance(kv, PagedKVCacheManager)
    n = len(starts)
    # row r's last token is planned at pair left - 2 and arrives at update left - 1
    left = min(map(sub, running.output_len[:n].tolist(), running.num_output[:n].tolist()))
    pairs = kv.decode_steps_fit(starts, max(min(max_pairs, left - 1), 0))
    clock, pending = engine.clock, engine.arrivals.pending
    arrival_s = None
    if pending and clock.step_clock:  # pair j admits the arrivals due at step_no + j
        pairs = min(pairs, (pending[0].arrival_step or 0) - clock.step_no)
    elif pending:  # pair j admits those due at the end of step N + j - 1
        arrival_s = pending[0].arrival_s or 0.0
        if arrival_s <= clock.time_s:
            return none
    if pairs < MIN_PAIRS:
        return none
    return stretch_times(engine.step_time, starts, pairs, queue.in_flight.end_s, arrival_s)


def stretch_times(step_time: StepTimeFn, starts: list[int], num_pairs: int, first_end_s: float,
                  arrival_s: float | None) -> tuple[int, float, array[float]]:
    """Pair j's plan's step time and the end of the step it updates (the one in flight for
    j = 0, then pair j - 1's plan), the pairs cut after the first update that ends at or
    after `arrival_s` (the next plan admits it): (pairs, the last plan's step time in ms, the
    ends). A cost model's decode_pricer prices pair by pair up to the arrival (or up to
    MAX_PRICED_ONE_BY_ONE pairs) in plain Python, cheaper than numpy calls over a few pairs,
    with the same bits."""
    pricer = getattr(step_time, "decode_pricer", None)
    if pricer is None or (arrival_s is None and num_pairs > MAX_PRICED_ONE_BY_ONE):
        priced = decode_steps_ms(step_time, np.array(starts, np.int64), num_pairs)
        ended = np.add.accumulate(np.concatenate(([first_end_s], priced[:num_pairs - 1] / 1000.0)))
        if arrival_s is not None:
            num_pairs = min(num_pairs, 1 + int(ended.searchsorted(arrival_s, "left")))
        return num_pairs, float(priced[num_pairs - 1]), array("d", ended[:num_pairs].tobytes())
    n, context = len(starts), sum(starts)
    price = pricer(n)
    ends, end_s, step_ms = array("d"), first_end_s, 0.0
    arrival_s = math.inf if arrival_s is None else arrival_s
    for j in range(num_pairs):  # (np.add.accumulate adds in this order too)
        ends.append(end_s)
        step_ms = price(context + n * j)
        if end_s >= arrival_s:
            break
        end_s += step_ms / 1000.0
    return len(ends), step_ms, ends


def whole(plan: SchedulerOutput, running: RunningBatch) -> bool:
    """Whether a plan samples a token of each running request (a last prefill chunk or a
    decode each), so that its update leaves every one a token on."""
    n, entries = len(running), plan.entries
    if len(entries) == 1 and isinstance(entries[0], DecodeChunk):
        return (entries[0].lo, entries[0].hi) == (0, n)
    ids: list[str] = []  # (the plan's columns, without building them)
    for entry in entries:
        if isinstance(entry, DecodeChunk):
            ids += entry.ids
        elif entry.sampled:
            ids.append(entry.id)
        else:
            return False
    return len(ids) == n and set(ids) == set(running.ids[:n])


def skip_pairs(engine: Engine, max_pairs: int) -> int:
    """Apply the quiet pairs from here (the batch quiet) without records or events: how
    many (0: none)."""
    scheduler, kv, clock, queue = engine.scheduler, engine.kv, engine.clock, engine.batch_queue
    assert isinstance(kv, PagedKVCacheManager) and queue is not None
    running = scheduler.running
    n = len(running)
    starts = running.num_computed[:n].tolist()
    pairs, step_ms, ends = quiet_pairs(engine, starts, max_pairs)
    if not pairs:
        return 0
    num_free, num_table = kv.num_free_blocks, kv.num_table_blocks
    kv.advance_decodes_unrecorded(running.requests, starts, pairs, known_lag=1)
    computed = running.num_computed[:n]
    computed += pairs
    finished = running.sample_chunk(0, n, clock.iter, pairs)
    assert not finished, "quiet pairs finish nobody"
    clock.step_end_s.extend(ends)
    # (kv.waste(running) without summing the batch again: each row computed `pairs` more)
    last = kv.waste_of(kv.num_table_blocks, sum(starts) + n * pairs, kv.num_free_blocks)
    engine.add_waste(fast_forward.waste_sums(kv, num_free, num_table, starts, pairs, last))
    clock.tick_many(pairs, ends[-1])
    plan = SchedulerOutput(entries=[DecodeChunk(0, n, running.ids[:n], computed - 1)])
    queue.in_flight = Flight(plan, clock.step_no - 1, ends[-1], step_ms, (),
                             (), tuple(running.ids), ())
    return pairs


def finish_pair(engine: Engine) -> bool:
    """The pair after a quiet stretch (the batch quiet) when some rows' last tokens are in
    flight: the next step planned for the other rows alone (vLLM schedules no token after a
    request's last), then the step in flight updated, which finishes those rows and frees
    their blocks. False (nothing done) where that pair would do more: admit an arrival,
    preempt, or plan nobody."""
    if arrival_due(engine):
        return False
    scheduler, kv, clock, queue = engine.scheduler, engine.kv, engine.clock, engine.batch_queue
    assert isinstance(kv, PagedKVCacheManager) and queue is not None
    running, flight = scheduler.running, queue.in_flight
    assert flight is not None
    n = len(running)
    # (plain Python: a batch is small, and numpy calls cost more than its rows)
    left = map(sub, running.output_len[:n].tolist(), running.num_output[:n].tolist())
    ending = [row for row, k in enumerate(left) if k <= 1]
    if not ending or len(ending) == n:
        return False
    keep = [row for row in range(n) if row not in ending]
    computed, size = running.num_computed[:n].tolist(), kv.block_size
    starts = [computed[row] for row in keep]
    crossing = sum(1 for p in starts if p % size == 0)
    if crossing > kv.num_free_blocks:
        return False  # a row would find no block: the scheduler preempts
    requests, ids = [running.requests[row] for row in keep], running.ids[:n]
    if crossing:  # plan step F + 1 (a row whose known tokens fill its blocks takes a block)
        kv.advance_decodes_unrecorded(requests, starts, 1, known_lag=1)
    bump(running.num_computed, n, ending)
    bump(running.num_placeholders, n, ending)
    step_ms = stretch_times(engine.step_time, starts, 1, flight.end_s, None)[1]
    planned = Flight(SchedulerOutput(entries=[DecodeChunk(0, len(keep), [r.id for r in requests],
                                                          np.array(starts, np.int64))]),
                     clock.step_no, flight.end_s, step_ms, (), (), tuple(ids), ())
    clock.step_no += 1
    finished = engine.apply_output(flight.output, flight.end_s)  # update step F
    kv.pool.drain()  # the frees its record would take
    assert len(finished) == n - len(keep), "the rows whose last token was in flight finish"
    # (kv.waste(running) without summing the batch again: the kept rows each computed one more)
    engine.add_waste(kv.waste_of(kv.num_table_blocks, sum(starts) + len(starts),
                                 kv.num_free_blocks))
    clock.time_s = max(clock.time_s, flight.end_s)
    clock.iter += 1
    queue.in_flight = planned
    return True


def bump(column: np.ndarray, n: int, skipped: list[int]) -> None:
    """One more in each of the first n rows of a batch column but the `skipped` rows (a slice
    and a few scalar writes cost less than indexing the others)."""
    column[:n] += 1
    for row in skipped:
        column[row] -= 1


def arrival_due(engine: Engine) -> bool:
    """Whether a request is due at the next plan (core/admit.py would admit it)."""
    clock, pending = engine.clock, engine.arrivals.pending
    return bool(pending) and engine.arrivals.key(pending[0]) <= (
        clock.step_no if clock.step_clock else clock.time_s)
