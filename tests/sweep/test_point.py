"""One point without Ray: its summary is the single run's, a fleet's replicas share the
arrivals through its router, configs that cannot fit are reported, not run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support.factories import run_checked

from servescope.core.engine import Engine
from servescope.core.resolve import resolve_config
from servescope.scenarios.diagnosis_check import prepare
from servescope.sweep.cost import prices
from servescope.sweep.grid import expand
from servescope.sweep.point import run_point
from servescope.traces.load import read_requests
from servescope.traces.upload_options import UploadOptions


def test_a_point_reports_the_single_run_of_its_config(trace_file: Path,
                                                      base: dict[str, Any]) -> None:
    specs = read_requests(trace_file, UploadOptions())[1]
    point = expand(base, {"max_num_seqs": [4], "max_num_batched_tokens": [512]})[0]
    report = run_point(point, specs, {"p99_ttft_ms": 50.0}, prices(["H100=2.0"]))
    config, step_time = prepare(point.config)
    engine = Engine(config, specs, step_time)
    for _ in engine.run():
        pass
    assert report["status"] == "ok"
    # a grid without fleet keys: one replica, today's engine, its summary exactly
    assert report["summary"] == engine.summary() and report["router"] == "round-robin"
    assert report["config"]["num_gpu_blocks"] == config.num_gpu_blocks
    duration, tokens = engine.time_s, engine.summary()["total_output_tokens"]
    assert report["cost"]["gpu_hours"] == duration / 3600
    assert report["cost"]["usd_per_m_output_tokens"] == duration / 3600 * 2.0 / tokens * 1e6
    assert report["meets_slo"] == (engine.summary()["p99_ttft_ms"] <= 50.0)
    assert report["diagnosis"]["dominant"] in (None, "kv_starvation", "batch_slots",
                                               "token_budget", "decode_floor", "memory_fit")


def test_the_simulated_steps_keep_every_invariant(trace_file: Path, base: dict[str, Any]) -> None:
    specs = read_requests(trace_file, UploadOptions(limit=12))[1]
    config, _ = prepare(resolve_config({**base, "max_num_seqs": 4,
                                              "max_num_batched_tokens": 512}).config)
    run_checked(config, specs)


def test_a_fleet_point_routes_with_its_router_and_adds_up(trace_file: Path,
                                                          base: dict[str, Any]) -> None:
    specs = read_requests(trace_file, UploadOptions())[1]
    point = expand(base, {"replicas": [3], "router": ["least-requests"]})[0]
    report = run_point(point, specs, {}, prices())
    assert report["router"] == "least-requests"
    assert report["summary"]["router"]["name"] == "least-requests"
    per_replica = report["summary"]["replicas"]
    assert [r["replica"] for r in per_replica] == [0, 1, 2]
    assert sum(r["completed"] for r in per_replica) == len(specs)
    assert report["summary"]["completed"] == len(specs)
    assert report["summary"]["total_output_tokens"] == sum(s.output_len for s in specs)
    assert report["cost"]["num_gpus"] == 3


def test_a_config_that_cannot_fit_is_reported_not_run(trace_file: Path) -> None:
    big = {"model": "meta-llama/Llama-3.1-405B-Instruct", "gpu": "L40S"}
    point = expand(big, {"max_num_seqs": [8]})[0]
    report = run_point(point, read_requests(trace_file, UploadOptions())[1], {}, prices())
    assert report["status"] == "does_not_fit"
    assert "does not fit" in report["reason"] and "summary" not in report


def test_a_fleet_points_diagnosis_reads_its_worst_replica(trace_file: Path,
                                                         base: dict[str, Any]) -> None:
    specs = read_requests(trace_file, UploadOptions())[1]
    point = expand(base, {"replicas": [3], "router": ["random"], "max_num_seqs": [2]})[0]
    slos = {"p99_ttft_ms": 1.0}  # every replica misses it
    report = run_point(point, specs, slos, prices())
    per_replica = [r["p99_ttft_ms"] for r in report["summary"]["replicas"]]
    worst = per_replica.index(max(per_replica))
    assert report["diagnosis"]["replica"] == worst
    assert [w["replica"] for w in report["why_fails"]] == [worst]


def test_a_one_replica_point_of_a_fleet_grid_has_the_fleets_keys(trace_file: Path,
                                                                base: dict[str, Any]) -> None:
    specs = read_requests(trace_file, UploadOptions(limit=8))[1]
    point = expand(base, {"replicas": [1], "router": ["least-kv"]})[0]
    report = run_point(point, specs, {}, prices())
    config, step_time = prepare(point.config)
    engine = Engine(config, specs, step_time, records=False)
    engine.run_to_end()
    fleet_keys = {"replicas", "router"}
    assert {k: v for k, v in report["summary"].items() if k not in fleet_keys} == \
        engine.summary()
    assert [r["replica"] for r in report["summary"]["replicas"]] == [0]
    assert report["summary"]["router"]["name"] == "least-kv"
