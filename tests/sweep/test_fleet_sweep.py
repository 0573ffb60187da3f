"""A tiny real sweep over replicas and routers (points run in this process, as Ray's tasks run
them): more replicas bring p99 TTFT down, the answer names the cheapest fleet that meets the
SLO, and every cheaper fleet misses it by its own summary."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from servescope.sweep import plan as sweep_plan
from servescope.sweep.point import run_point
from servescope.sweep.words import fleet_label
from servescope.traces.load import read_requests
from servescope.traces.upload_options import UploadOptions

ROUTERS = ["round-robin", "least-requests"]


def test_a_sweep_over_replicas_and_routers_names_the_cheapest_fleet(
        make_trace: Any, tmp_path: Path, base: dict[str, Any]) -> None:
    # 48 requests 5 ms apart: one replica queues them, four do not
    specs = read_requests(make_trace(tmp_path / "t.csv", 48, gap_ms=5), UploadOptions())[1]
    grid = {"replicas": [1, 2, 4], "router": ROUTERS, "max_num_seqs": [4]}
    plan = sweep_plan.make_plan(base, grid, {}, ["H100=2.0"])
    loose = [run_point(p, specs, {}, plan.prices) for p in plan.points]
    ttft = {(r["router"], r["replicas"]): r["summary"]["p99_ttft_ms"] for r in loose}
    for router in ROUTERS:
        assert ttft[(router, 4)] < ttft[(router, 1)]
    # an SLO between the slowest and the fastest fleet: some meet it, some do not
    target = (max(ttft.values()) + min(ttft.values())) / 2
    slos = {"p99_ttft_ms": target}
    plan = sweep_plan.make_plan(base, grid, slos, ["H100=2.0"])
    reports = [run_point(p, specs, slos, plan.prices) for p in plan.points]
    result = sweep_plan.summarize(plan, reports, {"address": "in-process", "nodes": []},
                                  len(specs))
    usd = {r["index"]: r["cost"]["usd_per_m_output_tokens"] for r in reports}
    named = next(r for r in reports if result["answer"].startswith(fleet_label(r) + " meet"))
    assert named["summary"]["p99_ttft_ms"] <= target
    for r in reports:
        if usd[r["index"]] < usd[named["index"]]:
            assert r["summary"]["p99_ttft_ms"] > target, fleet_label(r)
    assert f"{named['router']} routing" in result["answer"]
