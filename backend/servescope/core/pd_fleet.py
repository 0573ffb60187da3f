"""A P/D fleet: a prefill pool and a decode pool (each core/fleet.py's Fleet: its replicas,
engine configs and router) in one simulated clock, joined by KV links (core/kv_link.py), the
engines' schedulers running vLLM's connector rules (core/kv_connector.py).

A request is routed as llm-d's P/D profile does (llm-d-inference-scheduler pkg/plugins/
profile/pd_profile_handler.go): the decode profile picks a decode replica first, then the
prefix-based decider (prefix_based_pd_decider.go, PrefixBasedPDDecider.decide) prefills on a
prefill replica only when the prompt's tokens not cached on that decode replica reach
`nonCachedTokens` (`threshold`; 0, its default, always disaggregates); otherwise the decode
replica runs the whole request. A disaggregated request runs on its prefill replica with
max_tokens 1 (vLLM's P/D proxy), then reaches its decode replica when that prefill finishes.

The pools advance in rounds to a common gate: prefill to the gate, the prefills finished by
then handed to the decode pool, decode to the gate, and the loads it started told to the
prefill side. A prefill replica learns when its blocks are read only after the decode side
admits the request, so while blocks wait to be read rounds are at most HANDOFF_SYNC_MS apart:
a free lands at most that late (never, when a transfer takes longer than that).
"""

from __future__ import annotations

import dataclasses
import heapq
import math
from collections.abc import Iterator, Sequence
from typing import Any

from servescope.core.config import EngineConfig
from servescope.core.config_error import ConfigError
from servescope.core.fleet import Fleet, RoutedArrival, alike_hasher
from servescope.core.hardware import resolve
from servescope.core.kv_cache_manager import PagedKVCacheManager
from servescope.core.kv_connector import DecodeConnector, PrefillConnector
from servescope.core.kv_counting import CountingKVCacheManager
from servescope.core.kv_link import KVLink, LinkSpec, kv_bytes
from servescope.core.pd_events import EventQueue, PDEvent, PoolRouted, PoolStep, Transfer
from servescope.core.pd_summary import pd_summary, ttft_parts
from servescope.core.prefix import prompt_block_hashes
from servescope.core.records import StepRecord
from servescope.core.request import RequestSpec
from servescope.core.routers.base import Router

HANDOFF_SYNC_MS = 1.0  # ours: the bound on a prefill-side free's lateness (see above)


def handoff_bytes_per_token(config: EngineConfig) -> int:
    """A token's KV bytes as the decode side holds them (all its TP ranks)."""
    if not (config.model or config.model_config) or not config.gpu:
        raise ConfigError("decode.model", "a P/D fleet prices its KV handoff from the model's "
                          "geometry: give the decode pool a model and gpu")
    hw = resolve(config)
    return kv_bytes(hw.model, hw.kv_element_bytes, 1, config.tensor_parallel_size)


def check_pool(name: str, config: EngineConfig) -> None:
    """What the connector rules are written for: vLLM V1's synchronous scheduler, no drafts."""
    if config.policy != "vllm-v1":
        raise ConfigError(f"{name}.policy", "a P/D pool runs the vllm-v1 policy")
    if config.async_scheduling:
        raise ConfigError(f"{name}.async_scheduling", "a P/D pool schedules synchronously "
                          "(the connector rules are the synchronous scheduler's)")
    if config.speculative is not None:
        raise ConfigError(f"{name}.speculative_config", "a P/D pool decodes without "
                          "speculative decoding")


class PDFleet:
    def __init__(self, prefill_configs: Sequence[EngineConfig],
                 decode_configs: Sequence[EngineConfig], specs: Sequence[RequestSpec],
                 prefill_router: Router, decode_router: Router, link: LinkSpec,
                 threshold: int = 0, bytes_per_token: int | None = None,
                 failure_policy: str = "fail", fails: frozenset[str] = frozenset(),
                 records: bool = False) -> None:
        for name, configs in (("prefill", prefill_configs), ("decode", decode_configs)):
            for config in configs:
                check_pool(name, config)
        if any(s.arrival_s is None for s in specs):
            raise ConfigError("arrival_s", "a P/D fleet runs on the time clock")
        self.prefill = Fleet(prefill_configs, [dataclasses.replace(s, output_len=1)
                                               for s in specs], prefill_router, records=records,
                             scrape_interval_ms=0)
        self.decode = Fleet(decode_configs, specs, decode_router, records=records,
                            scrape_interval_ms=0)
        self.specs = list(self.decode.specs)
        for engine in self.prefill.engines:
            exact_kv(engine)
            engine.scheduler.connector = PrefillConnector()
        self.connectors: list[DecodeConnector] = []
        for d_config, engine in zip(decode_configs, self.decode.engines, strict=True):
            exact_kv(engine)
            links = {p: KVLink(link, min(p_config.tensor_parallel_size,
                                         d_config.tensor_parallel_size))
                     for p, p_config in enumerate(prefill_configs)}
            # each decode replica's own model geometry and TP (mixed replicas price apart)
            per_token = bytes_per_token or handoff_bytes_per_token(d_config)
            connector = DecodeConnector(links, per_token, failure_policy)
            connector.records = records
            engine.scheduler.connector = connector
            self.connectors.append(connector)
        for fleet in (self.prefill, self.decode):  # their KV is exact now: hashers anew
            fleet.hashers = [alike_hasher(e, fleet.router.block_size) for e in fleet.engines]
        self.threshold = threshold
        self.fails = fails  # request ids whose load fails (tests, what-ifs)
        self.arrival_s = {s.id: s.arrival_s or 0.0 for s in self.specs}
        self.decode_of: dict[str, int] = {}  # disaggregated request -> its decode replica
        self.colocated: set[str] = set()
        self.handoffs: list[tuple[float, int, str]] = []  # heap: (prefill end, seq, id)
        self.ready_s: dict[str, float] = {}  # handed over: its prefill's end
        self.events = EventQueue()  # what run() yields once nothing earlier can come
        self.num_seen = [0] * len(self.prefill.engines)  # prefill done requests handed on
        self.gate = 0.0
        self.finished = False

    def run(self) -> Iterator[PDEvent]:
        """The run to its end: with records, both pools' steps; always each pool's routing
        decisions and each transfer (core/pd_events.py), in time order."""
        index, specs = 0, self.specs
        while index < len(specs) or self.prefill_busy():
            arrival = (specs[index].arrival_s or 0.0) if index < len(specs) else math.inf
            gate = min(arrival, self.handoffs[0][0] if self.handoffs else math.inf,
                       self.gate + HANDOFF_SYNC_MS / 1000.0 if self.unread() else math.inf)
            if gate == math.inf:  # prefill engines idle with nothing to come: run them out
                gate = (max(self.gate, *(e.time_s for e in self.prefill.engines))
                        + HANDOFF_SYNC_MS / 1000.0)
            self.advance(gate)
            yield from self.events.before(gate)  # nothing earlier than the gate can come
            while index < len(specs) and (specs[index].arrival_s or 0.0) <= gate:
                yield from self.route(specs[index])
                index += 1
        self.advance(None)
        yield from self.events.before(math.inf)
        self.finish()

    def run_to_end(self) -> None:
        for _ in self.run():
            pass

    def advance(self, gate: float | None) -> None:
        """Both pools to `gate` (None: to their ends): prefill, the handoffs due, decode, then
        the loads' news; their events queued."""
        self.queue_steps("prefill", self.prefill.catch_up(gate))
        if gate is not None:
            self.prefill.settle(gate)  # every prefill that ends by the gate is seen there
        self.hand_over(math.inf if gate is None else gate)
        self.queue_steps("decode", self.decode.catch_up(gate))
        self.notify()
        if gate is not None:
            self.gate = gate

    def queue_steps(self, pool: str, steps: Iterator[tuple[int, StepRecord]]) -> None:
        for replica, record in steps:
            self.events.push(PoolStep(pool, replica, record))

    def prefill_busy(self) -> bool:
        return (any(e.scheduler.has_unfinished or e.arrivals.pending and
                    e.arrivals.next() is not e.arrivals.gate for e in self.prefill.engines)
                or bool(self.handoffs))

    def unread(self) -> bool:
        """Whether some prefill replica holds blocks whose read time it does not know yet."""
        return any(len(e.scheduler.connector.sending) > len(e.scheduler.connector.read_s)
                   for e in self.prefill.engines)

    def route(self, spec: RequestSpec) -> Iterator[PoolRouted]:
        """llm-d's P/D profile: a decode replica, then (the decider) a prefill replica."""
        now = spec.arrival_s or 0.0
        decode = self.decode.router.pick(spec, self.decode.states, now)
        give_hashes(self.decode, spec.id, decode.replica)
        self.decode.router.sent(spec, decode.replica, now)
        engine = self.decode.engines[decode.replica]
        non_cached = self.non_cached(spec, engine) if self.threshold > 0 else 0
        if self.threshold > 0 and non_cached < self.threshold:
            self.colocated.add(spec.id)
            self.decode.add_request(decode.replica, spec)
            yield PoolRouted("decode", RoutedArrival(
                spec.id, now, decode.replica, decode.scores, f"{decode.reason}; prefills "
                f"locally: {non_cached} non-cached tokens < pd_threshold {self.threshold}"))
            return
        yield PoolRouted("decode", RoutedArrival(spec.id, now, decode.replica, decode.scores,
                                                 decode.reason))
        prefill = self.prefill.router.pick(spec, self.prefill.states, now)
        give_hashes(self.prefill, spec.id, prefill.replica)
        self.prefill.router.sent(spec, prefill.replica, now)
        self.prefill.add_request(prefill.replica, dataclasses.replace(spec, output_len=1))
        self.decode_of[spec.id] = decode.replica
        self.connectors[decode.replica].expect(spec.id, prefill.replica, spec.id in self.fails)
        yield PoolRouted("prefill", RoutedArrival(spec.id, now, prefill.replica,
                                                  prefill.scores, prefill.reason))

    def non_cached(self, spec: RequestSpec, engine: Any) -> int:
        """The prompt's tokens past its prefix hit on a decode replica (PrefixCacheMatchInfo)."""
        block_size = engine.config.block_size
        hits = 0
        for block_hash in prompt_block_hashes(spec, block_size):
            if engine.kv.pool.lookup(block_hash) is None:
                break
            hits += 1
        return spec.prompt_len - hits * int(block_size)

    def hand_over(self, gate: float) -> None:
        """Prefills finished by `gate` reach their decode replicas, in the order they end."""
        for p, engine in enumerate(self.prefill.engines):
            for done in engine.done_requests[self.num_seen[p]:]:
                heapq.heappush(self.handoffs, (done.finish_time or 0.0, len(self.handoffs),
                                               done.id))
            self.num_seen[p] = len(engine.done_requests)
        by_id = None
        while self.handoffs and self.handoffs[0][0] <= gate:
            end, _, request_id = heapq.heappop(self.handoffs)
            self.ready_s[request_id] = end
            by_id = by_id or {s.id: s for s in self.specs}
            spec = dataclasses.replace(by_id[request_id], arrival_s=end)
            self.decode.add_request(self.decode_of[request_id], spec)

    def notify(self) -> None:
        """Tell each prefill replica when the decode side finishes reading its blocks."""
        prefill = self.prefill.engines
        for decode_replica, connector in enumerate(self.connectors):
            for load in connector.notices:
                prefill[load.prefill_replica].scheduler.connector.read_done(load.request_id,
                                                                            load.done_s)
                self.events.push(Transfer.of(load, decode_replica,
                                             self.ready_s[load.request_id]))
            connector.notices.clear()

    def finish(self) -> None:
        """Each decode-side request's TTFT counts from its client arrival, not the handoff."""
        for engine in self.decode.engines:
            for done in engine.done_requests:
                done.arrival_time = self.arrival_s[done.id]
        self.finished = True

    def ttft_parts(self) -> dict[str, dict[str, float]]:
        return ttft_parts(self)

    def summary(self) -> dict[str, Any]:
        assert self.finished, "run_to_end() first"
        return pd_summary(self)


def give_hashes(fleet: Fleet, request_id: str, replica: int) -> None:
    """The prompt hashes the pool's router just computed, to the replica it picked (as
    Fleet.route does: the replica's prefix cache then need not hash the prompt again)."""
    hashes, hasher = fleet.router.prompt_hashes(request_id), fleet.hashers[replica]
    if hashes and hasher is not None:
        hasher.give(request_id, hashes)


def exact_kv(engine: Any) -> None:
    """A fresh engine's KV block by block (connector loads and delayed frees keep block
    tables), where records=False gave it counts (core/kv_counting.py)."""
    kv = engine.kv
    if isinstance(kv, CountingKVCacheManager):
        paged = PagedKVCacheManager(kv.pool.num_gpu_blocks, kv.block_size, kv.enable_caching,
                                    0.0, kv.num_hash_lookahead_tokens, kv.num_prefill_lookahead)
        paged.watermark_blocks, paged.unique_ids = kv.watermark_blocks, kv.unique_ids
        paged.max_slot_tokens = kv.max_slot_tokens
        paged.pool.record_events = kv.pool.record_events
        engine.scheduler.kv = paged
