"""The sweep routes on a real server process (Ray in that process): a sweep over a preset runs
as a background job whose progress GET reports; bad input is a 400 naming the field."""

from __future__ import annotations

import json
import os
import signal
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from support.server import Server

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
BODY = {"workload": {"preset": "demo"}, "config": {"model": MODEL, "gpu": "H100"},
        "grid": {"max_num_seqs": [4, 16]}, "slos": {"p99_ttft_ms": 60000},
        "gpu_prices": {"H100": 2.5}}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    srv = Server(tmp_path_factory.mktemp("sweeps"), SERVESCOPE_SWEEP_NUM_CPUS="1",
                 SERVESCOPE_CLIENT_MAX_SWEEPS_PER_HOUR="100")
    yield srv
    srv.stop()


TOKENS: dict[str, str] = {}  # sweep id -> the token its start answered


def _call(server: Server, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """One call; a sweep's own path carries the token its start answered."""
    data = None if body is None else json.dumps(body).encode()
    token = TOKENS.get(path.rsplit("/", 1)[-1])
    req = urllib.request.Request(server.url + path, data=data, method=method,
                                 headers={"content-type": "application/json",
                                          **({"x-sweep-token": token} if token else {})})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            answer = json.loads(r.read())
            if path == "/api/sweeps" and method == "POST":
                TOKENS[answer["sweep_id"]] = answer["token"]
            return r.status, answer
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())
    except urllib.error.URLError as err:
        raise AssertionError(f"{err}; {server.died()}") from err


def wait_done(server: Server, sweep_id: str) -> dict[str, Any]:
    """Polls until the job ends (the server's own pace: no deadline but the test's timeout)."""
    seen_progress = []
    while True:
        status, view = _call(server, "GET", f"/api/sweeps/{sweep_id}")
        assert status == 200
        seen_progress.append(view["done"])
        if view["status"] != "running":
            assert seen_progress == sorted(seen_progress)
            return view
        time.sleep(0.2)


def test_a_sweep_runs_in_the_background_and_reports_its_points(server: Server) -> None:
    status, started = _call(server, "POST", "/api/sweeps", BODY)
    assert status == 202, started
    assert started["status"] == "running" and started["total"] == 2
    view = wait_done(server, started["sweep_id"])
    assert view["status"] == "done", view["error"]
    assert view["done"] == 2 and [p["point"] for p in view["points"]] == \
        [{"max_num_seqs": 4}, {"max_num_seqs": 16}]
    assert all(p["status"] == "ok" and p["cost"]["usd_per_gpu_hour"] == 2.5
               for p in view["points"])
    assert view["pareto"] and view["answer"] and view["ray"]["address"] == "in-process"
    assert view["workload"] == {"preset": "demo"}
    fleet = {"replicas": [2], "router": ["least-requests"]}  # a point is a fleet run too
    again = _call(server, "POST", "/api/sweeps", {**BODY, "grid": fleet})[1]
    view = wait_done(server, again["sweep_id"])  # Ray stayed up between
    assert view["status"] == "done", view["error"]
    summary = view["points"][0]["summary"]
    assert summary["router"]["name"] == "least-requests" and len(summary["replicas"]) == 2
    assert view["answer"].startswith("2 replicas with least-requests routing")


@pytest.mark.parametrize(("change", "field"), [
    ({"grid": {"max_num_seqs": [4], "turbo": [True]}}, "turbo"),
    ({"grid": {"max_num_batched_tokens": [0]}}, "max_num_batched_tokens"),
    ({"slos": {"p95_ttft_ms": 100}}, "p95_ttft_ms"),
    ({"grid": {"router": ["round-robin", "nearest"]}}, "router"),
    ({"grid": {"router": ["llm-d"], "router_config": [{"scorers": {"nope": 1}}]}},
     "router_config.scorers"),
    ({"config": {"gpu": "H100"}}, "model"),
    ({"workload": {"preset": "no-such-preset"}}, "preset"),
    ({"workload": {"trace": "0123456789abcdef"}}, "trace"),
])
def test_bad_sweeps_are_refused_naming_the_field(server: Server, change: dict[str, Any],
                                                 field: str) -> None:
    status, body = _call(server, "POST", "/api/sweeps", {**BODY, **change})
    assert status == 400, body
    assert body["detail"]["field"] == field and body["detail"]["message"]


def test_an_unknown_sweep_is_a_404(server: Server) -> None:
    status, body = _call(server, "GET", "/api/sweeps/nope")
    assert status == 404 and body["detail"]["field"] == "sweep_id"
    assert _call(server, "DELETE", "/api/sweeps/nope")[0] == 404


def test_the_route_is_in_the_openapi_schema(server: Server) -> None:
    schema = server.get("/openapi.json")
    assert {"post"} <= set(schema["paths"]["/api/sweeps"])
    assert "grid" in schema["components"]["schemas"]["SweepRequest"]["properties"]


def test_a_running_sweep_is_cancelled_and_the_next_one_runs(server: Server) -> None:
    grid = {"max_num_seqs": list(range(1, 41))}  # 40 points one at a time: seconds of work
    status, started = _call(server, "POST", "/api/sweeps",
                            {**BODY, "grid": grid, "max_parallel": 1})
    assert status == 202
    busy = _call(server, "POST", "/api/sweeps", BODY)
    assert busy[0] == 409 and busy[1]["detail"]["field"] == "sweep"
    assert _call(server, "DELETE", f"/api/sweeps/{started['sweep_id']}")[1]["cancelling"]
    view = wait_done(server, started["sweep_id"])
    assert view["status"] == "cancelled" and view["done"] < 40
    after = _call(server, "POST", "/api/sweeps", BODY)[1]
    assert wait_done(server, after["sweep_id"])["status"] == "done"


def _sweep_driver(server: Server) -> int | None:
    """The pid of the server's child that drives Ray (a spawned Python), or None."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (stat.parent / "cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == server.proc.pid and b"spawn_main" in cmdline:
            return int(stat.parent.name)
    return None


def test_ray_dying_mid_sweep_fails_that_sweep_and_the_server_lives_on(server: Server) -> None:
    """Ray's driver runs in a process of its own: when it dies (a Ray check failure aborts its
    process) the sweep fails saying so, and the next sweep starts a new one."""
    grid = {"max_num_seqs": list(range(1, 41))}
    status, started = _call(server, "POST", "/api/sweeps",
                            {**BODY, "grid": grid, "max_parallel": 1})
    assert status == 202
    while not _call(server, "GET", f"/api/sweeps/{started['sweep_id']}")[1]["done"]:
        time.sleep(0.1)  # until a point has been reported: Ray is up and working
    pid = _sweep_driver(server)
    assert pid is not None, "Ray's driver runs in the server's own process"
    os.kill(pid, signal.SIGKILL)
    view = wait_done(server, started["sweep_id"])
    assert view["status"] == "failed" and "ended" in view["error"], view["error"]
    assert 0 < view["done"] < 40
    again = _call(server, "POST", "/api/sweeps", BODY)
    assert again[0] == 202
    assert wait_done(server, again[1]["sweep_id"])["status"] == "done"
    assert _sweep_driver(server) not in (None, pid)


def _descendants(pid: int) -> set[int]:
    """Every live process below `pid` (Ray's GCS, raylet and workers below the driver)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            children.setdefault(int(stat.read_text().rsplit(")", 1)[1].split()[1]), []).append(
                int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    out, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.add(child)
            todo.append(child)
    return out


def test_ray_started_for_a_sweep_is_released_once_idle(tmp_path: Path) -> None:
    """SERVESCOPE_SWEEP_IDLE_S after a sweep ends with none started since, the driver process
    stops and Ray with it (its processes gone); waited for as a condition, not a sleep."""
    srv = Server(tmp_path, SERVESCOPE_SWEEP_NUM_CPUS="1", SERVESCOPE_SWEEP_IDLE_S="1")
    try:
        status, started = _call(srv, "POST", "/api/sweeps", BODY)
        assert status == 202
        deadline = time.monotonic() + 120  # a bound only against hanging when broken
        driver = None
        while driver is None or not _descendants(driver):  # Ray up below its driver
            assert time.monotonic() < deadline, "Ray never came up for the sweep"
            driver = _sweep_driver(srv)
            time.sleep(0.05)
        ray = _descendants(driver)
        assert wait_done(srv, started["sweep_id"])["status"] == "done"
        while _sweep_driver(srv) is not None or any(Path(f"/proc/{p}").exists() for p in ray):
            assert time.monotonic() < deadline, "Ray still up long after the idle time"
            time.sleep(0.1)
        again = _call(srv, "POST", "/api/sweeps", BODY)  # the next sweep starts Ray again
        assert wait_done(srv, again[1]["sweep_id"])["status"] == "done"
    finally:
        srv.stop()
