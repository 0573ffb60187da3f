"""The server's memory cap: a heavy job runs in a worker process whose address space is capped
(a job past its budget is a 413 naming it, the worker killed when late), and while the server's
memory is over `memory_cap_mb` new sessions, configures and jobs are refused naming the cap."""

from __future__ import annotations

import asyncio
import gc
import itertools
import json
import time

import pytest
from fastapi.testclient import TestClient
from support.server import ORIGIN, make_settings, receive

from servescope.api.app import create_app
from servescope.api.errors import JobError
from servescope.api.jobs.pool import MIB, Jobs


def test_a_job_past_its_memory_budget_is_refused_and_one_within_it_answers():
    async def main() -> None:
        jobs = Jobs(max_jobs=1, timeout_s=60, memory_cap_mb=600)  # 300 MiB a job
        assert await jobs.call("export", bytes, 10 * MIB) == bytes(10 * MIB)
        with pytest.raises(JobError, match=r"memory budget of 300 MiB") as err:
            await jobs.call("diagnosis", bytearray, 900 * MIB)
        assert err.value.code == "too_large" and jobs.running == 0 and not jobs.workers

    asyncio.run(main())


def test_a_late_job_is_killed_and_frees_its_slot():
    async def main() -> None:
        jobs = Jobs(max_jobs=1, timeout_s=1.0)
        late = asyncio.create_task(jobs.call("export", time.sleep, 60))
        while not jobs.workers:
            await asyncio.sleep(0.01)
        (worker,) = jobs.workers
        with pytest.raises(JobError, match=r"took longer than 1 s \(job_timeout_s\)"):
            await late
        assert not worker.proc.is_alive() and jobs.running == 0
        assert await jobs.call("summary", int, "42") == 42

    asyncio.run(main())


def test_over_the_cap_new_sessions_and_jobs_are_refused_naming_it(tmp_path):
    app = create_app(make_settings(tmp_path))
    with TestClient(app, headers=ORIGIN) as c:
        made = c.post("/api/sessions", json={"workload": {"preset": "demo"}}).json()
        sid = made["session_id"]
        app.state.registry.jobs.memory_cap = 1 * MIB  # any server is over a cap of 1 MiB
        with c.websocket_connect(made["ws_path"]) as driver:  # its creator's token: drives
            driver.send_text(json.dumps({"type": "configure", "v": 1,
                                         "config": {"max_num_seqs": 8}}))
            err = next(m for m in iter(lambda: receive(driver), None) if m["type"] == "error")
            assert err["code"] == "memory" and "memory_cap_mb (1)" in err["message"]
        r = c.post("/api/sessions", json={"workload": {"preset": "demo"}})
        assert r.status_code == 503 and r.json()["detail"]["code"] == "memory"
        assert "memory_cap_mb (1)" in r.json()["detail"]["message"]
        r = c.get(f"/api/sessions/{sid}/diagnosis", params={"full": True})
        assert r.status_code == 503 and "memory_cap_mb (1)" in r.json()["detail"]["message"]
        with c.websocket_connect("/ws/sessions/new") as ws:
            err = receive(ws)
            assert err["type"] == "error" and err["code"] == "memory"
        app.state.registry.jobs.memory_cap = 0  # lifted: the same calls go through
        r = c.get(f"/api/sessions/{sid}/diagnosis", params={"full": True})
        assert r.status_code == 200
        r = c.post("/api/sessions", json={"workload": {"preset": "demo"}})
        assert r.status_code == 201


def test_a_stream_comes_in_chunks_and_one_never_read_frees_its_worker():
    async def main() -> None:
        jobs = Jobs(max_jobs=1, timeout_s=30)
        chunks = await jobs.stream("export", itertools.repeat, b"ab", 3)
        assert [c async for c in chunks] == [b"ab"] * 3 and jobs.running == 0
        unread = await jobs.stream("export", itertools.repeat, b"ab", 10**9)  # blocks its pipe
        (worker,) = jobs.workers
        del unread  # a response that never started its body
        gc.collect()
        give_up = time.monotonic() + 60  # a bound only against hanging when broken
        while jobs.running:
            assert time.monotonic() < give_up, "the unread stream kept its slot"
            await asyncio.sleep(0.01)
        assert not worker.proc.is_alive() and not jobs.workers

    asyncio.run(main())


def test_a_stream_that_fails_midway_ends_with_its_tail():
    async def main() -> None:
        jobs = Jobs(max_jobs=1, timeout_s=30)
        chunks = await jobs.stream("export", map, bytes.fromhex, ["61", "not hex"],
                                   tail=lambda message: f"tail: {message}".encode())
        got = [c async for c in chunks]
        assert got[0] == b"a" and got[1].startswith(b"tail: the export failed: ")
        assert len(got) == 2 and jobs.running == 0 and not jobs.workers

    asyncio.run(main())
