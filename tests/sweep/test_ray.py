"""The sweep on a real two-node Ray cluster started here (one CPU a node): points run on both
nodes and equal single runs; a failing point is retried and reported; a cancel stops it."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import ray
from ray.cluster_utils import Cluster

from servescope.sweep import plan as sweep_plan
from servescope.sweep import ray_runner
from servescope.sweep.point import run_point
from servescope.traces.load import read_requests
from servescope.traces.upload_options import UploadOptions

MODEL = "meta-llama/Llama-3.1-8B-Instruct"

STORE = 80 * 2**20  # object store per node: the trace is a few KiB


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "object_store_memory": STORE, "include_dashboard": False})
    cluster.add_node(num_cpus=1, object_store_memory=STORE)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address)
    while ray.available_resources().get("CPU") != 2:  # both nodes' CPUs known to the cluster
        time.sleep(0.1)
    ray.shutdown()
    # the flaky task below is defined here: workers get it by value, not by importing tests
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


def test_points_run_on_both_nodes_and_equal_single_runs(
        cluster: Cluster, tmp_path: Path, base: dict[str, Any],
        make_trace: Callable[..., Path]) -> None:
    # points of a few hundred requests: the first two are running together, one a node
    specs = read_requests(make_trace(tmp_path / "t.csv", 240), UploadOptions())[1]
    plan = sweep_plan.make_plan(base, {"max_num_seqs": [2, 4], "max_num_batched_tokens":
                                       [256, 1024]}, {"p99_ttft_ms": 500.0})
    result = sweep_plan.execute(plan, specs, ray_address=cluster.address)
    assert not ray.is_initialized()  # the sweep left the cluster it joined
    node_ids = {n["node"] for n in result["ray"]["nodes"]}
    assert len(node_ids) == 2
    assert {p["node"] for p in result["points"]} == node_ids
    for report, point in zip(result["points"], plan.points, strict=True):
        alone = run_point(point, specs, plan.slos, plan.prices)
        assert report["status"] == "ok" and report["attempts"] == 1
        assert report["summary"] == alone["summary"]
        assert report["request_goodput"] == alone["request_goodput"]


def flaky_task(point: Any, specs: Any, slos: Any, prices: Any) -> dict[str, Any]:
    """Fails its first attempt at point 1 (a marker file counts attempts across workers) and
    every attempt at point 2."""
    marker = Path(f"{prices['marker']}.{point.index}")
    if point.index == 2 or (point.index == 1 and not marker.exists()):
        marker.write_text("tried")
        raise RuntimeError(f"injected failure at point {point.index}")
    return run_point(point, specs, slos, {})


def test_a_failed_point_is_retried_then_reported(cluster: Cluster, trace_file: Path,
                                                 base: dict[str, Any], tmp_path: Path) -> None:
    specs = read_requests(trace_file, UploadOptions(limit=8))[1]
    plan = sweep_plan.make_plan(base, {"max_num_seqs": [2, 4, 8]}, {})
    ray_runner.connect(cluster.address)
    try:
        reports = ray_runner.run(plan.points, specs, {}, {"marker": str(tmp_path / "m")},
                                 task=flaky_task)
    finally:
        ray.shutdown()
    assert [r["index"] for r in reports] == [0, 1, 2]
    assert reports[0]["status"] == "ok" and reports[0]["attempts"] == 1
    assert reports[1]["status"] == "ok" and reports[1]["attempts"] == 2
    assert reports[1]["errors"] == ["RuntimeError: injected failure at point 1"]
    assert reports[2]["status"] == "failed" and reports[2]["attempts"] == ray_runner.ATTEMPTS
    assert reports[2]["reason"] == "RuntimeError: injected failure at point 2"


def test_a_cancelled_sweep_stops_and_says_so(cluster: Cluster, trace_file: Path,
                                             base: dict[str, Any]) -> None:
    specs = read_requests(trace_file, UploadOptions())[1]
    plan = sweep_plan.make_plan(base, {"max_num_seqs": [2, 3, 4, 5, 6, 7]}, {})
    cancel, seen = threading.Event(), []

    def on_report(report: dict[str, Any]) -> None:
        seen.append(report["index"])
        cancel.set()

    with pytest.raises(ray_runner.Cancelled):
        sweep_plan.execute(plan, specs, ray_address=cluster.address, max_parallel=1,
                           on_report=on_report, cancel=cancel)
    assert seen == [0] and not ray.is_initialized()


def test_the_command_joins_the_cluster_by_address(cluster: Cluster, trace_file: Path,
                                                  tmp_path: Path) -> None:
    (tmp_path / "base.json").write_text(json.dumps({"model": MODEL, "gpu": "H100"}))
    (tmp_path / "grid.json").write_text(json.dumps({"max_num_seqs": [2, 4, 8, 16]}))
    out = tmp_path / "r.json"
    done = subprocess.run([sys.executable, "-m", "servescope.cli", "sweep", "--trace",
                           str(trace_file), "--config", str(tmp_path / "base.json"), "--grid",
                           str(tmp_path / "grid.json"), "--ray-address", cluster.address,
                           "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["ray"]["address"] == cluster.address
    assert {p["node"] for p in result["points"]} == {n["node"] for n in result["ray"]["nodes"]}
    assert len(result["ray"]["nodes"]) == 2
