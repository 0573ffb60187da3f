"""A fleet replica's quiet decode stretch planned past the router's scrapes and applied late
(core/fleet.py, runs without records): a scrape inside it reads the replica off the plan, and
the stretch is applied up to the arrival of a request routed to the replica, or whole once a
scrape comes after its last step starts. Its steps are priced as far as someone looks (in
doubling chunks, as fast_forward.priced_until does), never to a finish a cut will not reach.

Nothing in a quiet stretch decides by the clock until its end: the running batch, the empty
waiting queue and each row's blocks follow from the plan (a row at position p starts a block
at every step s with (p + s) % block_size == 0: core/kv_cache_manager.py decode_steps_fit),
and its only finishes come with its last step. So applying its first k steps late leaves the
replica as stopping at each scrape would have (a gate cuts a stretch into exactly those steps;
times accumulate step by step either way). For a router fed KV events, the cached blocks its
steps evict follow from the free queue's order (blocks without a hash first, then the hashed
oldest first, and nothing else frees or takes one meanwhile): at each scrape the 'removed'
events of the steps before it are published unapplied (core/block_pool.py tell_evictions),
as when the replica stops at every scrape. Its 'stored' hashes are mostly its requests' own,
which the kv_event_queue leaves out; but a block that holds the end of a prompt's shared part
and then decoded tokens is stored under a shared hash once decoding fills it, so a stretch
that fills one before a scrape is applied up to that scrape (`heard_until`), as stopping
there would have.
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import accumulate, compress, repeat
from operator import add, itemgetter, lt, mod, mul

import numpy as np

from servescope.core import fast_forward
from servescope.core.engine import Engine
from servescope.core.kv_cache_manager import PagedKVCacheManager
from servescope.core.routers.base import ReplicaState
from servescope.core.step_time import decode_steps_ms

UNASKED = -1  # a stretch's shared_store not found yet (a step count is never negative)


class PlannedStretch:
    """The stretch's steps priced so far: step i starts at starts[i] and ends at
    starts[i + 1], taking the i-th of the step times priced in `parts` (chunks);
    `complete` once its last step is priced. A fleet asks where a scrape falls at every
    replica's every scrape: bisect on a list costs a tenth of numpy's searchsorted on a few
    dozen steps, and `seen` keeps the last answer (the run and the scrape ask alike)."""

    __slots__ = ("chunk", "complete", "due_s", "engine", "gauges", "max_steps", "num_priced",
                 "parts", "residues", "seen", "shared_store", "start", "starts")

    def __init__(self, engine: Engine, max_steps: int, due_s: float | None) -> None:
        running = engine.scheduler.running
        self.engine = engine
        self.start = running.num_computed[:len(running)].copy()
        self.max_steps = max_steps
        self.due_s = due_s  # the next arrival it holds: no step starts at or after it
        self.parts: list[np.ndarray] = []
        self.num_priced = 0
        self.starts = [engine.clock.time_s]
        self.complete = False
        self.chunk = fast_forward.FIRST_CHUNK_STEPS
        self.residues: list[int] = []  # for blocks_taken, once asked (sorted_residues)
        self.seen = (float("nan"), 0)  # a time asked of, the steps that start before it
        # the first step count after which a shared hash is stored (a subscriber hears it),
        # found when a subscriber first asks (heard_until): UNASKED till then
        self.shared_store: int | None = UNASKED
        # what a scrape reads that its steps do not change: running, free and usable blocks,
        # block size
        kv = engine.kv
        self.gauges = (len(running), kv.num_free_blocks, kv.pool.num_usable_blocks,
                       engine.config.block_size)

    def price_to(self, at_s: float) -> None:
        """Price steps until the next unpriced one would start at or after `at_s`."""
        starts = self.starts
        while not self.complete and starts[-1] < at_s:
            priced = self.num_priced
            part = decode_steps_ms(self.engine.step_time, self.start + priced,
                                   min(self.chunk, self.max_steps - priced))
            self.chunk *= 2
            ends = accumulate((part / 1000.0).tolist(), initial=starts[-1])
            next(ends)  # (step by step, as np.add.accumulate sums: the same floats)
            starts.extend(ends)
            self.parts.append(part)
            self.num_priced = num_steps = priced + len(part)
            self.complete = num_steps == self.max_steps
            if self.due_s is not None and starts[-1] >= self.due_s:
                self.num_priced = num_steps = bisect_left(starts, self.due_s, 0, num_steps)
                del starts[num_steps + 1:]
                self.complete = True

    def steps_before(self, at_s: float) -> int:
        """How many of its steps start before `at_s` (priced as far as that needs)."""
        seen_s, num_steps = self.seen
        if seen_s != at_s:
            if self.starts[-1] < at_s:
                self.price_to(at_s)
            num_steps = bisect_left(self.starts, at_s, 0, self.num_priced)
            self.seen = (at_s, num_steps)
        return num_steps

    def blocks_taken(self, num_steps: int) -> int:
        """The free blocks its first `num_steps` steps take: a row at p takes
        ((p - 1) % bs + k) // bs in k steps, so all rows take len * (k // bs) plus one each
        for the rows whose (p - 1) % bs >= bs - k % bs."""
        bs, residues = self.gauges[3], self.residues or self.sorted_residues()
        whole, part = divmod(max(num_steps, 0), bs)
        num_rows = len(residues)
        later = num_rows - bisect_left(residues, bs - part) if part else 0
        return num_rows * whole + later

    def sorted_residues(self) -> list[int]:
        """Each row's (p - 1) % bs, sorted (plain Python at C speed: a few rows), kept for
        blocks_taken."""
        bs = self.gauges[3]
        self.residues = sorted(map(mod, map(add, self.start.tolist(), repeat(bs - 1)),
                                   repeat(bs)))
        return self.residues

    def ends_before(self, at_s: float) -> bool:
        """Whether every step of the stretch starts before `at_s`."""
        num_priced = self.num_priced
        if num_priced and self.starts[num_priced - 1] >= at_s:  # its last priced step
            return False
        return self.steps_before(at_s) == self.num_priced and self.complete

    def heard_until(self, at_s: float) -> bool:
        """For a KV-event subscriber that hears of its steps that start before `at_s` there:
        False when one of them stores a block under a shared hash (it is applied up to `at_s`,
        as stopping there would have); else True, once the 'removed' events of the cached
        blocks they evict are published, unapplied: they take the free blocks without a hash
        first, then the hashed ones oldest first (core/free_queue.py), and nothing else frees
        or takes one before the stretch is applied (core/block_pool.py tell_evictions)."""
        num_steps = self.steps_before(at_s)
        if self.shared_store == UNASKED:  # (unapplied: the engine stands as planned from)
            self.shared_store = first_shared_store(self.engine, self.start)
        if self.shared_store is not None and num_steps >= self.shared_store:
            return False
        pool = self.engine.kv.pool
        pool.tell_evictions(self.blocks_taken(num_steps) - pool.free_queue.num_unhashed)
        return True

    def state(self, replica: int, at_s: float) -> ReplicaState:
        """The replica as a scrape at `at_s` sees it: after the steps that start before. (A
        fleet reads every replica at every scrape: the tuple made without the NamedTuple's
        Python-level __new__.)"""
        num_running, num_free, usable, bs = self.gauges  # nothing waits in a stretch
        free = num_free - self.blocks_taken(self.steps_before(at_s))
        return tuple.__new__(ReplicaState, (replica, num_running, 0,
                                            1.0 - free / usable if usable else 0.0, free,
                                            usable, bs, at_s))

    def apply_before(self, at_s: float | None) -> None:
        """Apply its steps that start before `at_s` (None: all of them)."""
        if at_s is None:
            self.price_to(float("inf"))
        num_steps = self.num_priced if at_s is None else self.steps_before(at_s)
        if num_steps:
            parts = self.parts
            step_ms = (parts[0] if len(parts) == 1 else np.concatenate(parts))[:num_steps]
            plan = (self.start, step_ms, np.array(self.starts[:num_steps + 1]))
            fast_forward.apply_unrecorded(self.engine, plan)


def run_until(engine: Engine, at_s: float, evictions_heard: bool) -> PlannedStretch | None:
    """Run the engine's steps that start before `at_s` (it holds a gate there); a quiet
    stretch that goes on past `at_s` comes back planned, unapplied, its evictions before
    `at_s` published if `evictions_heard` (a KV-event subscriber hears of them at the scrape
    after they happen).
    An idle engine with nothing to come but its gate is left as it stands, gate and all:
    it would only pause there."""
    if idle(engine):
        return None
    engine.arrivals.hold_at(at_s)
    while True:
        bound = (fast_forward.stretch_bound(engine, past_gate=True)
                 if fast_forward.quiet(engine) and not engine.clock.step_clock else None)
        if bound is not None:
            ahead = PlannedStretch(engine, *bound)
            if ahead.ends_before(at_s):
                ahead.apply_before(None)
                continue
            if evictions_heard and not ahead.heard_until(at_s):  # a 'stored' heard at `at_s`
                ahead.apply_before(at_s)
                continue
            return ahead
        if not engine.advance_unrecorded():
            return None


def idle(engine: Engine) -> bool:
    """Whether the engine has nothing to run and nothing to come but its gate (if any)."""
    arrivals = engine.arrivals
    return (engine.batch_queue is None and not engine.scheduler.has_unfinished
            and (not arrivals.pending or arrivals.pending[0] is arrivals.gate))


def first_shared_store(engine: Engine, start: np.ndarray) -> int | None:
    """After how many quiet steps from here a row first completes a block with a shared hash
    (core/prefix.py: a block that starts inside the prompt's shared segments; in a quiet
    stretch at most the block a row is filling), None if no row does. Block i of a row at
    position p is cached once the row has crossed a block boundary (core/kv_cache_manager.py
    advance_decodes) and holds (i + 1) * block_size tokens."""
    kv, running = engine.kv, engine.scheduler.running
    assert isinstance(kv, PagedKVCacheManager)
    bs, n = kv.block_size, len(start)
    # the rows whose whole prompt is cached (every shared block) drop out first, at C speed:
    # most do (a decoding row's prompt is, but for its first few tokens)
    ids, num_cached = running.ids, kv.num_cached_blocks
    held = map(mul, map(num_cached.get, ids, repeat(0, n)), repeat(bs))
    first = None
    for row in compress(range(n), map(lt, held, running.prompt_len[:n].tolist())):
        request, block, p = running[row], num_cached.get(ids[row], 0), int(start[row])
        prefix = request.spec.prefix
        if prefix and block * bs < min(sum(map(itemgetter(1), prefix)), request.prompt_len):
            steps = max((block + 1) * bs - p, bs - p % bs)
            first = steps if first is None else min(first, steps)
    return first
