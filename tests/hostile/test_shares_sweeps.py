"""Fair shares of sweeps (issue 33, part 3): a sweep's work (points x requests) is bounded
before anything runs, only its token reads or cancels it, a client starts a few an hour, and
the server stops one at its deadline. Before, anyone could start a 4,800-point sweep (hours of
every CPU) and read or cancel everyone's."""

from __future__ import annotations

import time

import pytest
from support.hostile_shares import call

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
BODY = {"workload": {"preset": "demo"}, "config": {"model": MODEL, "gpu": "H100"},
        "grid": {"max_num_seqs": [4, 16]}, "slos": {"p99_ttft_ms": 60000}}
MANY = {**BODY, "grid": {"max_num_seqs": list(range(1, 41))}, "max_parallel": 1}


def test_a_sweep_over_the_work_budget_is_refused_before_it_runs(serve):
    server = serve(sweep_max_work=10)
    t0 = time.monotonic()
    status, body, _ = call(server, "POST", "/api/sweeps",
                           {**BODY, "grid": {"max_num_seqs": list(range(1, 201))}})
    assert status == 413 and body["detail"]["field"] == "grid", body
    assert "sweep_max_work" in body["detail"]["message"]
    assert time.monotonic() - t0 < 10


def test_only_the_token_reads_or_cancels_a_sweep_and_a_client_starts_few(serve):
    server = serve(client_max_sweeps_per_hour=1, sweep_num_cpus=1)
    status, started, _ = call(server, "POST", "/api/sweeps", MANY)
    assert status == 202 and started["token"], started
    path, token = f"/api/sweeps/{started['sweep_id']}", started["token"]
    for headers in (None, {"x-sweep-token": "not-its-token"}):
        for method in ("GET", "DELETE"):
            status, body, _ = call(server, method, path, headers=headers)
            assert status == 403 and body["detail"]["field"] == "token", body
    assert "token" not in call(server, "GET", path, headers={"x-sweep-token": token})[1]
    status, body, headers = call(server, "POST", "/api/sweeps", BODY)
    assert status == 429 and "client_max_sweeps_per_hour" in body["detail"]["message"]
    status, body, headers = call(server, "POST", "/api/sweeps", BODY,
                                 headers={"x-upload-token": "another-client-00001"})
    assert status == 409 and int(headers["retry-after"]) > 0, body
    status, body, _ = call(server, "DELETE", path, headers={"x-sweep-token": token})
    assert status == 200 and body["cancelling"] is True
    wait_ended(server, path, token)


def wait_ended(server, path: str, token: str) -> dict:
    """The sweep's view once it has ended (bounded: a sweep that never ends fails the test)."""
    t0 = time.monotonic()
    while (view := call(server, "GET", path, headers={"x-sweep-token": token})[1])[
            "status"] == "running":
        assert time.monotonic() - t0 < 120, "the sweep did not end"
        time.sleep(0.5)
    return view


@pytest.mark.slow
def test_a_sweep_is_stopped_at_its_deadline(serve):
    server = serve(sweep_deadline_s=3, sweep_num_cpus=1)
    status, started, _ = call(server, "POST", "/api/sweeps", MANY)
    assert status == 202
    path, token = f"/api/sweeps/{started['sweep_id']}", started["token"]
    view = wait_ended(server, path, token)
    assert view["status"] == "cancelled" and "deadline" in view["error"], view
    assert view["done"] < 40
