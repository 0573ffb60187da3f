"""Sessions simulate ahead in the background: a 200,000-request Azure upload is accepted and
its session seeks to its last arrival; a failing simulation says why over REST and the socket;
a data directory that cannot hold a run is a clear 500; a reaped session leaves no files, and
neither does a server that stops."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient
from support.server import ORIGIN, UPLOAD_TOKEN, receive, request_list, validate

from servescope.api.app import create_app
from servescope.api.sessions import build
from servescope.core.decode_stretch import DecodeStretch

BURST = 256  # requests arriving together: 200,000 requests in few steps keeps the test short


def azure_csv(n: int) -> bytes:
    lines = ["TIMESTAMP,ContextTokens,GeneratedTokens"]
    for k in range(n):
        second = k // BURST
        lines.append(f"2023-11-16 {18 + second // 3600:02d}:{second // 60 % 60:02d}:"
                     f"{second % 60:02d}.0000000,{4 + k % 5},2")
    return ("\n".join(lines) + "\n").encode()


def new_session(client, workload: dict, config: dict | None = None):
    return client.post("/api/sessions", json={"workload": workload, "config": config or {}})


def ended(client, sid: str) -> dict:
    """The session once its background simulation has ended (the summary route waits)."""
    client.get(f"/api/sessions/{sid}/summary")
    return client.get(f"/api/sessions/{sid}").json()


def test_a_200k_request_azure_upload_runs_and_its_session_seeks_to_the_last_arrival(
        client, tmp_path):
    n = 200_000
    r = client.post("/api/traces", files={"file": ("azure.csv", azure_csv(n))})
    assert r.status_code == 201, r.text
    assert r.json()["num_requests"] == n
    last_arrival = (n - 1) // BURST  # s after the first row
    config = {"max_num_seqs": BURST, "max_num_batched_tokens": 4096, "num_gpu_blocks": 2048}
    with client.websocket_connect("/ws/sessions/new") as ws:
        ws.send_text(json.dumps({"type": "configure", "v": 1, "config": config,
                                 "workload": {"trace": r.json()["trace_id"],
                                              "upload_token": UPLOAD_TOKEN}}))
        text = ws.receive_text()
        init = validate(json.loads(text))
        # init says how many requests, not which: its size does not grow with the trace
        assert init["type"] == "init" and init["num_requests"] == n and len(text) < 4096
        ws.send_text(json.dumps({"type": "seek", "v": 1, "time_s": float(last_arrival)}))
        seen = []
        while not ((msg := receive(ws))["type"] == "status" and msg["iters"][0] > 0):
            seen.append(msg)
        kf = next(m for m in reversed(seen) if m["type"] == "keyframe")
        records = [r for m in seen[seen.index(kf):] if m["type"] == "step" for r in m["records"]]
        reached = records[-1]["t"] if records else kf["time_s"]
        assert (records[-1]["i"] if records else kf["iter"]) == msg["iters"][0]
        assert last_arrival <= reached == msg["time_s"] < last_arrival + 1.0, reached
    # the pages, concatenated, are the file's rows in its order
    listed = request_list(lambda p: client.get(p).json(), init["session_id"])
    assert [(r["prompt_len"], r["output_len"]) for r in listed] == [
        (4 + k % 5, 2) for k in range(n)]
    firsts = listed[::BURST]  # the first of each second's burst
    assert [r["arrival_s"] for r in firsts] == [float(s) for s in range(len(firsts))]
    assert len({r["id"] for r in listed}) == n
    described = ended(client, init["session_id"])
    (simulated,) = described["simulated"]
    assert simulated["done"] and simulated["error"] is None
    assert simulated["num_records"] > msg["iters"][0]


def test_a_failing_background_simulation_says_why_over_rest_and_the_socket(
        client, monkeypatch):
    real = build.engine_source

    records = [0]  # what the source gave before it failed (a decode stretch gives many)

    def failing(engine):
        step = real(engine)
        count = [0]

        def source():
            count[0] += 1
            if count[0] > 20:
                raise RuntimeError("the cost model has no entry for this batch")
            item = step()
            records[0] += (item.num_steps if isinstance(item, DecodeStretch)
                           else int(item is not None))
            return item
        return source

    monkeypatch.setattr(build, "engine_source", failing)
    with client.websocket_connect("/ws/sessions/new") as ws:
        ws.send_text(json.dumps({"type": "configure", "v": 1, "workload": {"preset": "demo"}}))
        init = receive(ws)
        while True:  # progress frames are what `receive` skips: read them raw here
            msg = json.loads(ws.receive_text())
            if msg["type"] == "progress" and msg["done"][0]:
                break
    n = records[0]
    why = (f"the simulation failed after {n} records: RuntimeError: the cost model has no "
           "entry for this batch")
    assert msg["errors"] == [why] and msg["computed"] == [n - 1] and n >= 20
    (simulated,) = client.get(f"/api/sessions/{init['session_id']}").json()["simulated"]
    assert simulated == {"engine": 0, "num_records": n, "done": True, "error": why,
                         "reach": n - 1, "scout": None}  # (a short run has no scout)
    (summary,) = client.get(f"/api/sessions/{init['session_id']}/summary").json()
    assert summary["error"] == why and summary["num_records"] == n


def test_a_data_dir_that_cannot_hold_a_run_is_a_500_naming_it_and_no_session_is_left(
        client, settings):
    runs = settings.data_dir / "runs"
    registry = client.app.state.registry
    new_session(client, {"synthetic": {"num_requests": 5}})  # one session that stays
    before = set(registry.sessions)
    for f in runs.iterdir():
        f.unlink()
    runs.rmdir()
    runs.write_text("not a folder")  # the runs folder cannot be made
    r = new_session(client, {"preset": "demo"})
    assert r.status_code == 500, r.text
    detail = r.json()["detail"]
    assert detail["code"] == "storage"
    assert "the data directory is not writable" in detail["message"]
    assert set(registry.sessions) == before


def test_a_reaped_session_and_a_reconfigured_one_leave_no_run_files(client, clock, settings):
    runs = settings.data_dir / "runs"
    sid = new_session(client, {"synthetic": {"num_requests": 50, "seed": 2}}).json()["session_id"]
    ended(client, sid)
    mine = sorted(p.name for p in runs.glob(f"{sid}-*"))
    assert mine == [f"{sid}-1-0.sqlite3", f"{sid}-1-0.sqlite3-shm", f"{sid}-1-0.sqlite3-wal"]
    registry = client.app.state.registry
    clock.advance(settings.session_idle_s + 1)
    assert sid in registry.reap()
    assert list(runs.glob(f"{sid}-*")) == []


def test_run_stores_are_removed_at_start_and_at_a_clean_shutdown(settings):
    runs = settings.data_dir / "runs"
    runs.mkdir(parents=True)
    (runs / "old-1-0.sqlite3").write_bytes(b"a previous process's run")
    with TestClient(create_app(settings), headers=ORIGIN) as client:
        assert list(runs.iterdir()) == []  # nobody owns a previous process's runs
        done = new_session(client, {"synthetic": {"num_requests": 20, "seed": 1}})
        ended(client, done.json()["session_id"])
        # one still simulating ahead when the server stops (a long run)
        busy = new_session(client, {"synthetic": {"num_requests": 20_000, "seed": 1}})
        assert busy.status_code == 201, busy.text
        assert len(list(runs.glob(f"{busy.json()['session_id']}-*"))) >= 1
    assert list(runs.iterdir()) == []
