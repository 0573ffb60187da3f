"""A fleet: N engines (each core/engine.py's exact Engine; configs may differ, sync or async)
behind a router, advanced in one simulated clock.

Arrivals are routed in time order. Before a request arriving at T is routed, every replica has
run each step that starts before the router's latest scrape S <= T and stands at a gate there
(core/arrivals.py, core/admit.py): an idle one waits, it never jumps past a moment the router
may still send it something. The router sees each replica as of S: S is T when
`scrape_interval_ms` is 0, else the last multiple of the interval (llm-d's endpoint picker
scrapes vLLM's /metrics every 50 ms: config.SCRAPE_INTERVAL_MS); finishes reach it at the same
scrapes. A routed request joins its replica's queue of arrivals, exactly as the single engine
holds its own up front, so one replica gives the single engine's records byte for byte, and
fast-forward and the counting KV manager work per replica between scrapes. Workloads on the
step clock (arrival_step) are routed at each arrival's step, unstale. A router that reads
neither states nor finishes (round-robin, random, session) stops no replica when no records are
wanted: every request is routed, then each replica runs to its end, as a separate engine.
Without records a replica's quiet stretch also runs past scrapes (core/planned_stretch.py):
a scrape reads the replica off its plan, and only a request routed to it cuts the stretch;
and a replica found idle at a scrape is settled: until a request is routed to it, scrapes
read it as it stood then, without running it or telling the router anything of it.

A router that wants KV events (prefix-precise, llm-d's precise scorer) subscribes to each
replica's block pool (core/block_pool.py kv_event_queue, vLLM's BlockStored / BlockRemoved
with the shared hashes); the events of the steps before a scrape reach it at that scrape, a
block stored and evicted in between as both (the router may delay them further:
core/routers/llm_d.py kv_event_delay_ms).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from servescope.core.arrivals import Arrivals
from servescope.core.config import SCRAPE_INTERVAL_MS, EngineConfig
from servescope.core.engine import Engine
from servescope.core.fleet_summary import fleet_summary
from servescope.core.kv_cache_manager import PagedKVCacheManager
from servescope.core.planned_stretch import PlannedStretch, idle, run_until
from servescope.core.prefix import BlockHasher
from servescope.core.records import StepRecord
from servescope.core.request import RequestSpec
from servescope.core.routers.base import ReplicaState, Router
from servescope.core.routers.make import make_router
from servescope.core.scheduler.make import Workload
from servescope.core.step_time import StepTimeFn


@dataclass(frozen=True, slots=True)  # one a request: no __dict__ each
class RoutedArrival:
    """One routing decision, as the view draws it."""

    request_id: str
    arrival_s: float
    replica: int
    scores: tuple[float, ...]
    reason: str


FleetEvent = RoutedArrival


def hold(engine: Engine, at: float | None) -> None:
    """The engine's gate at `at` (None: none, it runs to its end)."""
    if at is None:
        engine.arrivals.drop_gate()
    else:
        engine.arrivals.hold_at(at)


def alike_hasher(engine: Engine, block_size: int) -> BlockHasher | None:
    """The engine's prefix-cache hasher if it hashes a prompt as a router of `block_size`
    does (core/prefix.py prompt_block_hashes: that block size, no lookahead tokens)."""
    kv = engine.kv
    if not isinstance(kv, PagedKVCacheManager) or not kv.enable_caching:
        return None
    hasher = kv.hasher
    alike = hasher.block_size == block_size and hasher.num_hash_lookahead_tokens == 0
    return hasher if alike else None


def scrape(engine: Engine, replica: int, at_s: float) -> ReplicaState:
    """What vLLM's /metrics says of one replica now: its queues and KV cache usage."""
    kv, scheduler = engine.kv, engine.scheduler
    usable, free = kv.pool.num_usable_blocks, kv.num_free_blocks
    return ReplicaState(replica, len(scheduler.running), len(scheduler.waiting),
                        1.0 - free / usable if usable else 0.0, free, usable,
                        engine.config.block_size, at_s)


class Fleet:
    def __init__(self, configs: Sequence[EngineConfig], specs: Sequence[RequestSpec],
                 router: Router, step_time_fns: Sequence[StepTimeFn | None] | None = None,
                 records: bool = True, scrape_interval_ms: float = SCRAPE_INTERVAL_MS) -> None:
        fns = list(step_time_fns or [None] * len(configs))
        # each engine sees the whole workload once (its scheduler's and acceptance's choices),
        # then holds only what the router sends it; the workload is sorted once, here
        workload = Workload(specs)
        self.engines = [Engine(c, workload, fn, records=records, queue_requests=False)
                        for c, fn in zip(configs, fns, strict=True)]
        arrivals = Arrivals(specs, self.engines[0].step_clock)
        self.specs = list(arrivals.pending)  # in arrival order
        self.key = arrivals.key
        self.records = records
        self.router = router
        self.interval_s = scrape_interval_ms / 1000.0
        self.replica_of: dict[str, int] = {}
        self.num_reported = [0] * len(self.engines)  # done requests the router has heard of
        self.kv_usage_peak: list[float | None] = [None] * len(self.engines)  # as scraped
        self.states: list[ReplicaState] = []
        self.scraped_at: float | None = None
        self.kv_events = router.wants_kv_events  # each replica's pool queues its KV events
        for engine in self.engines if self.kv_events else ():
            engine.kv.pool.kv_event_queue = []
        # each replica's quiet stretch planned past the last scrape, not yet applied
        self.ahead: list[PlannedStretch | None] = [None] * len(self.engines)
        # replicas found idle at a scrape, sent nothing since: each stands as scraped then, so
        # a scrape neither runs nor re-reads it (runs without records)
        self.settled = [False] * len(self.engines)
        # each replica's prefix-cache hasher where it hashes as the router does (it takes the
        # router's prompt hashes), else None
        self.hashers = [alike_hasher(engine, router.block_size) for engine in self.engines]

    @property
    def done_requests(self) -> list[Any]:
        return [r for engine in self.engines for r in engine.done_requests]

    def run(self) -> Iterator[RoutedArrival | tuple[int, StepRecord]]:
        """Routing decisions and (replica, record) pairs in time order. (The fleet keeps no
        log of its decisions: who wants them takes them here; `replica_of` says where each
        request went.)"""
        scrapes = self.records or self.router.reads_replicas
        for spec in self.specs:
            at = self.scrape_time(spec)
            if scrapes and at != self.scraped_at:
                yield from self.catch_up(at)
            yield self.route(spec)
        yield from self.catch_up(None)

    def run_to_end(self) -> None:
        for _ in self.run():
            pass

    def scrape_time(self, spec: RequestSpec) -> float:
        """When the router last scraped before `spec` arrives (on the workload's clock)."""
        at = self.key(spec)
        if self.engines[0].step_clock or self.interval_s <= 0:
            return at
        return (at // self.interval_s) * self.interval_s

    def catch_up(self, at: float | None) -> Iterator[tuple[int, StepRecord]]:
        """Every replica run to the gate at `at` (None: to its end), then scraped."""
        n = len(self.engines)
        if self.records:
            streams = []
            for replica, engine in enumerate(self.engines):
                hold(engine, at)
                streams.append([(r.time_s, replica, r.iter, r) for r in engine.run()])
            for _, replica, _, record in heapq.merge(*streams):
                yield replica, record
            moved = [True] * n
        else:
            moved = [self.run_unrecorded(replica, at) for replica in range(n)]
        if at is not None:
            self.scraped_at = at
            self.observe(at, moved)

    def run_unrecorded(self, replica: int, at: float | None) -> bool:
        """One replica's steps that start before `at` (None: to its end), a quiet stretch
        that reaches past `at` kept planned (core/planned_stretch.py); False when it is still
        inside the stretch planned before (it finished nothing since)."""
        engine, ahead = self.engines[replica], self.ahead[replica]
        if at is not None and self.settled[replica]:
            return False
        if ahead is not None:
            if at is not None and not ahead.ends_before(at):
                # observe reads the replica off its plan (a subscriber hears of its evictions by
                # now, unless a shared block is stored by now: then it is applied to `at`)
                if not self.kv_events or ahead.heard_until(at):
                    return False
            ahead.apply_before(at)
            self.ahead[replica] = None
        if at is not None:
            self.ahead[replica] = ahead = run_until(engine, at, self.kv_events)
            self.settled[replica] = ahead is None and idle(engine)
            return True
        engine.arrivals.drop_gate()
        while engine.advance_unrecorded():
            pass
        return True

    def observe(self, at: float, moved: Sequence[bool]) -> None:
        """Scrape every replica; tell the router which requests finished on the replicas
        that `moved` and the KV events of all (a settled replica has neither)."""
        states, peaks, engines, settled = [], self.kv_usage_peak, self.engines, self.settled
        last, hears = self.states, self.kv_events
        for replica, ahead in enumerate(self.ahead):
            if settled[replica] and not moved[replica]:  # as last scraped, but for the time
                engine = engines[replica]  # (made as PlannedStretch.state makes one)
                states.append(tuple.__new__(ReplicaState, (
                    *last[replica][:-1], engine.time_s if engine.step_clock else at)))
                continue
            if ahead is not None:
                state = ahead.state(replica, at)
            else:
                engine = engines[replica]
                state = scrape(engine, replica, engine.time_s if engine.step_clock else at)
            states.append(state)
            peak = peaks[replica]
            if peak is None or state.kv_usage > peak:
                peaks[replica] = state.kv_usage
            if moved[replica] or hears:
                self.hear(replica, at)
        self.states = states

    def hear(self, replica: int, at: float) -> None:
        """Tell the router the replica's finishes and KV events since the last scrape."""
        engine, router = self.engines[replica], self.router
        done, num_reported = engine.done_requests, self.num_reported[replica]
        if len(done) > num_reported:
            for request in done[num_reported:]:
                router.finished(request.id, replica, request.finish_time or 0.0)
            self.num_reported[replica] = len(done)
        pool = engine.kv.pool
        if pool.kv_event_queue:
            router.kv_events(replica, pool.take_kv_events(), at)

    def route(self, spec: RequestSpec) -> RoutedArrival:
        now_s = spec.arrival_s if spec.arrival_s is not None else float(spec.arrival_step or 0)
        decision = self.router.pick(spec, self.states, now_s)
        self.add_request(decision.replica, spec)
        hashes, hasher = self.router.prompt_hashes(spec.id), self.hashers[decision.replica]
        if hashes and hasher is not None:
            hasher.give(spec.id, hashes)
        self.router.sent(spec, decision.replica, now_s)
        self.replica_of[spec.id] = decision.replica
        return RoutedArrival(spec.id, now_s, decision.replica, decision.scores, decision.reason)

    def settle(self, at: float) -> None:
        """Apply every replica's planned steps that start before `at` (its done requests then
        say what finished by `at`)."""
        for replica, ahead in enumerate(self.ahead):
            if ahead is not None:
                ahead.apply_before(at)
                self.ahead[replica] = None

    def add_request(self, replica: int, spec: RequestSpec) -> None:
        """`spec` joins a replica's arrivals; a quiet stretch planned past it is cut there."""
        ahead = self.ahead[replica]
        if ahead is not None:  # the steps that start before it arrives, then no further
            ahead.apply_before(self.key(spec))
            self.ahead[replica] = None
        self.engines[replica].add_request(spec)
        self.settled[replica] = False  # (a P/D handoff too: the replica has work again)

    def summary(self) -> dict[str, Any]:
        """The fleet-wide vllm-bench keys, `replicas` (one object each) and `router`."""
        return fleet_summary(self.engines, self.kv_usage_peak, self.router.totals())


def make_fleet(configs: Sequence[EngineConfig], specs: Sequence[RequestSpec],
               step_time_fns: Sequence[StepTimeFn | None] | None = None, records: bool = True,
               seed: int = 0) -> Fleet:
    """The fleet the first config's fleet keys ask for (router, router_config,
    scrape_interval_ms), one engine per config (core/resolve.py's resolve_fleet)."""
    first = configs[0]
    router = make_router(first.router, len(configs), first.router_config, seed,
                         first.block_size)
    return Fleet(configs, specs, router, step_time_fns, records, first.scrape_interval_ms)
