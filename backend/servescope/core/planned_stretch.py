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
times accumulate step by step either way). One thing the plan does not say is which cached
blocks its new blocks evict: for a router fed KV events a stretch is read off its plan only at
scrapes before its steps take more than the free blocks without a hash (its own 'stored'
hashes are its requests' own, which core/block_pool.py's kv_event_queue leaves out); at the
first scrape after that it is applied up to the scrape, so its evictions reach the router
there, as when the replica stops at every scrape.
"""

from __future__ import annotations

from bisect import bisect_left

import numpy as np

from servescope.core import fast_forward
from servescope.core.engine import Engine
from servescope.core.routers.base import ReplicaState
from servescope.core.step_time import decode_steps_ms


class PlannedStretch:
    """The stretch's steps priced so far: step_ms[i] starts at clock[i] and ends at
    clock[i + 1]; `complete` once its last step is priced. `starts` is clock as a list
    (a fleet asks where a scrape falls at every replica's every scrape: bisect on a list
    costs a tenth of numpy's searchsorted on a few dozen steps)."""

    __slots__ = ("chunk", "clock", "complete", "due_s", "engine", "later", "max_steps",
                 "start", "starts", "step_ms")

    def __init__(self, engine: Engine, max_steps: int, due_s: float | None) -> None:
        running = engine.scheduler.running
        self.engine = engine
        self.start = running.num_computed[:len(running)].copy()
        self.max_steps = max_steps
        self.due_s = due_s  # the next arrival it holds: no step starts at or after it
        self.step_ms = np.zeros(0)
        self.clock = np.array([engine.clock.time_s])
        self.starts = [engine.clock.time_s]
        self.complete = False
        self.chunk = fast_forward.FIRST_CHUNK_STEPS
        self.later: list[int] | None = None  # for blocks_taken

    def price_to(self, at_s: float) -> None:
        """Price steps until the next unpriced one would start at or after `at_s`."""
        while not self.complete and self.starts[-1] < at_s:
            priced = len(self.step_ms)
            part = decode_steps_ms(self.engine.step_time, self.start + priced,
                                   min(self.chunk, self.max_steps - priced))
            self.chunk *= 2
            ends = np.add.accumulate(np.concatenate((self.clock[-1:], part / 1000.0)))
            self.step_ms = np.concatenate((self.step_ms, part))
            self.clock = np.concatenate((self.clock, ends[1:]))
            self.starts.extend(ends[1:].tolist())
            num_steps = len(self.step_ms)
            self.complete = num_steps == self.max_steps
            if self.due_s is not None and self.starts[-1] >= self.due_s:
                num_steps = self.steps_before(self.due_s)
                self.step_ms, self.clock = self.step_ms[:num_steps], self.clock[:num_steps + 1]
                del self.starts[num_steps + 1:]
                self.complete = True

    def steps_before(self, at_s: float) -> int:
        """How many of its priced steps start before `at_s` (price_to(at_s) first)."""
        return bisect_left(self.starts, at_s, 0, len(self.step_ms))

    def blocks_taken(self, num_steps: int) -> int:
        """The free blocks its first `num_steps` steps take: a row at p takes
        ((p - 1) % bs + k) // bs in k steps, so all rows take len * (k // bs) plus one each
        for the rows whose (p - 1) % bs >= bs - k % bs."""
        bs = self.engine.config.block_size
        if self.later is None:  # rows whose (p - 1) % bs is at least r, for each r
            per_residue = np.bincount((self.start - 1) % bs, minlength=bs)
            self.later = per_residue[::-1].cumsum()[::-1].tolist() + [0]
        whole, part = divmod(max(num_steps, 0), bs)
        return len(self.start) * whole + (self.later[bs - part] if part else 0)

    def ends_before(self, at_s: float) -> bool:
        """Whether every step of the stretch starts before `at_s`."""
        self.price_to(at_s)
        return self.complete and self.steps_before(at_s) == len(self.step_ms)

    def evicts_before(self, at_s: float) -> bool:
        """Whether its steps that start before `at_s` take more than the free blocks without
        a hash, so evict cached blocks (core/free_queue.py: those go first)."""
        self.price_to(at_s)
        taken = self.blocks_taken(self.steps_before(at_s))
        return taken > self.engine.kv.pool.free_queue.num_unhashed

    def state(self, replica: int, at_s: float) -> ReplicaState:
        """The replica as a scrape at `at_s` sees it: after the steps that start before."""
        self.price_to(at_s)
        engine = self.engine
        kv, scheduler = engine.kv, engine.scheduler
        usable = kv.pool.num_usable_blocks
        free = kv.num_free_blocks - self.blocks_taken(self.steps_before(at_s))
        return ReplicaState(replica, len(scheduler.running), len(scheduler.waiting),
                            1.0 - free / usable if usable else 0.0, free, usable,
                            engine.config.block_size, at_s)

    def apply_before(self, at_s: float | None) -> None:
        """Apply its steps that start before `at_s` (None: all of them)."""
        self.price_to(float("inf") if at_s is None else at_s)
        num_steps = len(self.step_ms) if at_s is None else self.steps_before(at_s)
        if num_steps:
            plan = (self.start, self.step_ms[:num_steps], self.clock[:num_steps + 1])
            fast_forward.apply_unrecorded(self.engine, plan)


def run_until(engine: Engine, at_s: float, evictions_heard: bool) -> PlannedStretch | None:
    """Run the engine's steps that start before `at_s` (it holds a gate there); a quiet
    stretch that goes on past `at_s` comes back planned, unapplied, unless `evictions_heard`
    (a KV-event subscriber hears of them at the scrape after they happen) and its steps
    before `at_s` evict cached blocks: then those are applied, and what follows planned.
    An idle engine with nothing to come but its gate is left as it stands, gate and all:
    it would only pause there."""
    arrivals = engine.arrivals
    if (engine.batch_queue is None and not engine.scheduler.has_unfinished
            and (not arrivals.pending or arrivals.pending[0] is arrivals.gate)):
        return None
    arrivals.hold_at(at_s)
    while True:
        bound = (fast_forward.stretch_bound(engine, past_gate=True)
                 if fast_forward.quiet(engine) and not engine.clock.step_clock else None)
        if bound is not None:
            ahead = PlannedStretch(engine, *bound)
            if ahead.ends_before(at_s):
                ahead.apply_before(None)
                continue
            if not (evictions_heard and ahead.evicts_before(at_s)):
                return ahead
            ahead.apply_before(at_s)  # its evictions are heard at this scrape
            continue
        if not engine.advance_unrecorded():
            return None
