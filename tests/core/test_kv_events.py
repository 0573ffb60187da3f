"""A replica's prefix cache reaching the precise router as KV events (core/block_pool.py's
kv_event_queue, delivered by core/fleet.py at each scrape): the pool's own events on hand-made
blocks, a hand-made pair of requests sharing a system prompt, and the events rebuilding each
replica's cache map of shared hashes at every scrape of a multi-tenant run."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
import pytest
from support.factories import routed_of

from servescope.core.block_pool import BlockPool
from servescope.core.config import EngineConfig
from servescope.core.fleet import Fleet, RoutedArrival
from servescope.core.prefix import prompt_block_hashes
from servescope.core.request import RequestSpec
from servescope.core.routers.make import make_router
from servescope.traces.tenants import multi_tenant


def test_the_pool_queues_stored_and_evicted_shared_hashes_only() -> None:
    pool = BlockPool(6, True)
    pool.kv_event_queue = []
    blocks = pool.get_new_blocks(3)
    pool.cache_blocks(blocks, [11, 12, -5], "a")  # -5: a's own block, no one else's
    assert pool.take_kv_events() == [("stored", (11, 12))]
    pool.free_blocks(blocks[::-1])
    pool.get_new_blocks(5)  # the two never-used blocks, then the three cached ones evicted
    [(kind, hashes)] = pool.take_kv_events()
    assert kind == "removed" and sorted(hashes) == [11, 12]
    assert pool.take_kv_events() == []

CONFIG = EngineConfig.from_dict({"num_gpu_blocks": 64, "block_size": 4,
                                 "enable_prefix_caching": True})
# b arrives a second after a, long after a finished; they share 12 tokens: 3 of b's 4 blocks
SPECS = [RequestSpec("a", 16, 2, arrival_s=0.0, prefix=(("sys", 12),)),
         RequestSpec("b", 16, 2, arrival_s=1.0, prefix=(("sys", 12),))]


def routed(delay_ms: float) -> tuple[Fleet, list[RoutedArrival]]:
    """The fleet run to its end, and its decisions."""
    router = make_router("prefix-precise", 2, {"kv_event_delay_ms": delay_ms}, 0, 4)
    fleet = Fleet([CONFIG] * 2, SPECS, router, scrape_interval_ms=0.0)
    return fleet, routed_of(fleet)


def test_b_goes_where_as_blocks_are_cached() -> None:
    fleet, (first, second) = routed(0.0)
    assert second.replica == first.replica
    assert "3/4 prompt blocks cached" in second.reason
    index = fleet.router.precise  # type: ignore[attr-defined]
    assert set(prompt_block_hashes(SPECS[0], 4)[:3]) <= set(index.replicas_of)


def test_events_later_than_the_arrival_are_not_known_yet() -> None:
    second = routed(2000.0)[1][1]  # a's blocks reach the router 2 s after they are stored
    assert "0/4 prompt blocks cached" in second.reason


CONFIG_SMALL = EngineConfig.from_dict({"num_gpu_blocks": 120, "block_size": 16,
                                       "enable_prefix_caching": True,
                                       "max_num_batched_tokens": 512})
TENANTS = multi_tenant(np.random.default_rng(5), 160, 20.0, num_tenants=6,
                       system_prompt_len=256, turns=(1, 3), user_len=(16, 64),
                       output_len=(8, 48), think_s=0.5)


@pytest.mark.parametrize(("records", "scrape_interval_ms"),
                         [(True, 50.0), (False, 50.0), (True, 150.0), (False, 150.0)])
def test_the_events_heard_rebuild_each_replicas_cache_map_at_every_scrape(
        records: bool, scrape_interval_ms: float) -> None:
    router = make_router("prefix-precise", 3, {}, 0, 16)
    heard: list[Counter[int]] = [Counter() for _ in range(3)]
    num_removed = [0]
    deliver = router.kv_events

    def listen(replica: int, events: Sequence[tuple[str, tuple[int, ...]]],
               now_s: float) -> None:
        for kind, hashes in events:
            heard[replica].update({h: 1 if kind == "stored" else -1 for h in hashes})
            num_removed[0] += len(hashes) if kind == "removed" else 0
        deliver(replica, events, now_s)

    router.kv_events = listen  # type: ignore[method-assign]

    class Checked(Fleet):
        def observe(self, at: float, moved: Sequence[bool]) -> None:
            super().observe(at, moved)
            for replica, engine in enumerate(self.engines):
                pool = engine.kv.pool
                # a planned stretch's evictions before `at` are heard before it is applied:
                # the next `num_told` hashed free blocks
                told = {pool.block_hash[b] for b in pool.free_queue.peek_hashed(0, pool.num_told)}
                held = {h for h, n in heard[replica].items() if n > 0}
                assert held == {h for h in pool.cached if h >= 0} - told

    Checked([CONFIG_SMALL] * 3, TENANTS, router, records=records,
            scrape_interval_ms=scrape_interval_ms).run_to_end()
    assert num_removed[0] > 50  # the caches were too small: evictions were heard too
