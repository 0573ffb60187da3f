"""A fleet's frames (api/records/fleet_frames.py) folded from two replicas' records, here two
engines run apart and merged in time order as core/fleet.py's Fleet.run() yields them."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from support.factories import make_config

from servescope.api.records.fleet_frames import POOL_CELLS, FleetFrames
from servescope.api.records.track_source import fleet_source
from servescope.core.engine import Engine
from servescope.core.request import RequestSpec


def run_fleet(parts: list[list[RequestSpec]], viewed: int, **config: object):
    """Each part on its own engine; the records of all, in time order, through fleet_source."""
    engines = [Engine(make_config(**config), part) for part in parts]
    items = sorted(((rec.time_s, k, rec) for k, e in enumerate(engines) for rec in e.run()),
                   key=lambda x: (x[0], x[1]))
    routed = [SimpleNamespace(request_id=s.id, arrival_s=s.arrival_s, replica=k,
                              scores=(1.0 * (k == 0), 1.0 * (k == 1)), reason=f"part {k}")
              for k, part in enumerate(parts) for s in part]
    routed.sort(key=lambda r: r.arrival_s)
    frames = FleetFrames([s for p in parts for s in p], [e.config.num_gpu_blocks for e in engines])
    source = fleet_source(iter([*routed, *((k, rec) for _, k, rec in items)]), viewed, frames)
    mine = list(iter(source, None))
    return frames, mine, [rec for _, k, rec in items], engines


def spec(rid: str, prompt: int, output: int, at: float, prefix: int = 0) -> RequestSpec:
    return RequestSpec(rid, prompt, output, arrival_s=at,
                       prefix=(("system", prefix),) if prefix else ())


def test_the_viewed_replicas_records_come_through_and_every_replica_is_folded():
    parts = [[spec("a0", 20, 4, 0.0), spec("a1", 12, 6, 0.001)], [spec("b0", 8, 9, 0.0005)]]
    frames, mine, items, _ = run_fleet(parts, viewed=1)
    assert [r.iter for r in mine] == list(range(len(mine)))
    assert all(set(r.arrivals) <= {"b0"} for r in mine)
    for k in (0, 1):
        own = [r for r in items if any(x.startswith("ab"[k]) for x in (*r.running, *r.waiting,
                                                                      *r.finished))]
        t = own[len(own) // 2].time_s  # a record mid-run: the row is that record's counts
        row = frames.frame(t, None)["replicas"][k]
        last = [r for r in own if r.time_s <= t][-1]
        assert (row["num_running"], row["num_waiting"]) == (len(last.running), len(last.waiting))


def test_prefix_hit_rate_counts_the_second_requests_full_cached_blocks():
    # block_size 4: b's first 16 prompt tokens are the shared system prompt a stored (4 full
    # blocks); vLLM's get_computed_blocks hits only full blocks, and a's were all computed
    # before b arrives. Queries: both prompts (20 + 20 tokens), hits: 16.
    parts = [[spec("a", 20, 2, 0.0, prefix=16), spec("b", 20, 2, 5.0, prefix=16)]]
    frames, *_ = run_fleet(parts, viewed=0, enable_prefix_caching=True, num_gpu_blocks=32)
    row = frames.frame(10.0, None)["replicas"][0]
    assert row["prefix_cache_hit_rate"] == 16 / 40
    assert frames.frame(1.0, None)["replicas"][0]["prefix_cache_hit_rate"] == 0.0


def test_p99_ttft_so_far_is_the_engines_own_over_the_first_tokens_come():
    parts = [[spec(f"r{i}", 30 + 7 * i, 3, 0.002 * i) for i in range(6)]]
    frames, _, items, (engine,) = run_fleet(parts, viewed=0)
    ttfts = [m["ttft_ms"] for m in engine.request_metrics()]
    end = items[-1].time_s
    assert frames.frame(end, None)["replicas"][0]["p99_ttft_ms"] == round(
        float(np.percentile(ttfts, 99)), 3)
    assert frames.frame(-1.0, None)["replicas"][0]["p99_ttft_ms"] is None


def test_the_pool_cells_show_blocks_in_use_and_none_at_the_end():
    parts = [[spec("a", 40, 3, 0.0)]]  # 40 tokens: 10 blocks of 4 of the 15 usable
    frames, _, items, _ = run_fleet(parts, viewed=0)
    pool = frames.frame(items[0].time_s, None)["replicas"][0]["pool"]
    assert len(pool) == POOL_CELLS and 0 < sum(pool) / POOL_CELLS <= 100
    assert frames.frame(items[-1].time_s + 1, None)["replicas"][0]["pool"] == [0] * POOL_CELLS


def test_routed_arrivals_come_once_per_window_and_the_newest_after_a_seek():
    parts = [[spec("a0", 8, 2, 0.0), spec("a1", 8, 2, 0.2)], [spec("b0", 8, 2, 0.1)]]
    frames, *_ = run_fleet(parts, viewed=0)
    ids = lambda f: [r["request_id"] for r in f["routed"]]  # noqa: E731
    assert ids(frames.frame(0.15, None)) == ["a0", "b0"]
    assert ids(frames.frame(0.3, 0.15)) == ["a1"]
    assert frames.frame(0.3, 0.15)["routed"][0] == {
        "request_id": "a1", "arrival_s": 0.2, "replica": 0, "scores": [1.0, 0.0],
        "reason": "part 0"}
