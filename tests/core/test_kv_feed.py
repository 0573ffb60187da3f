"""A replica's prefix cache reaching the precise router as KV events (core/kv_feed.py, fed by
core/fleet.py at each scrape), on a hand-made pair of requests sharing a system prompt."""

from __future__ import annotations

from servescope.core.config import EngineConfig
from servescope.core.fleet import Fleet
from servescope.core.prefix import prompt_block_hashes
from servescope.core.request import RequestSpec
from servescope.core.routers.make import make_router

CONFIG = EngineConfig.from_dict({"num_gpu_blocks": 64, "block_size": 4,
                                 "enable_prefix_caching": True})
# b arrives a second after a, long after a finished; they share 12 tokens: 3 of b's 4 blocks
SPECS = [RequestSpec("a", 16, 2, arrival_s=0.0, prefix=(("sys", 12),)),
         RequestSpec("b", 16, 2, arrival_s=1.0, prefix=(("sys", 12),))]


def routed(delay_ms: float) -> Fleet:
    router = make_router("prefix-precise", 2, {"kv_event_delay_ms": delay_ms}, 0, 4)
    fleet = Fleet([CONFIG] * 2, SPECS, router, scrape_interval_ms=0.0)
    fleet.run_to_end()
    return fleet


def test_b_goes_where_as_blocks_are_cached() -> None:
    fleet = routed(0.0)
    first, second = fleet.routed
    assert second.replica == first.replica
    assert "3/4 prompt blocks cached" in second.reason
    index = fleet.router.precise  # type: ignore[attr-defined]
    assert set(prompt_block_hashes(SPECS[0], 4)[:3]) <= set(index.replicas_of)


def test_events_later_than_the_arrival_are_not_known_yet() -> None:
    second = routed(2000.0).routed[1]  # a's blocks reach the router 2 s after they are stored
    assert "0/4 prompt blocks cached" in second.reason
