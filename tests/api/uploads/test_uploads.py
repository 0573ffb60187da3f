"""Trace uploads over REST: formats detected, errors naming line and field, the size limit,
fuzzed bodies never answered with a 5xx, uploads usable as a session's workload."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.server import (
    ORIGIN,
    UPLOAD_TOKEN,
    UPLOADS,
    make_settings,
    receive,
    receive_until,
    request_list,
)

from servescope.api.app import create_app
from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.request import RequestSpec
from servescope.traces.recording import header, write_recording

ROWS = [{"id": "a", "arrival_s": 0.0, "prompt_len": 40, "output_len": 5},
        {"id": "b", "arrival_s": 0.1, "prompt_len": 90, "output_len": 3}]


def upload(client, body: bytes, name="trace.json"):
    return client.post("/api/traces", files={"file": (name, body, "application/json")})


def test_upload_returns_id_format_and_summary_then_runs(client):
    r = upload(client, json.dumps(ROWS).encode())
    assert r.status_code == 201, r.text
    data = r.json()
    assert data["format"] == "workload-json" and data["num_requests"] == 2
    assert data["summary"]["total_prompt_tokens"] == 130
    assert client.get(f"/api/traces/{data['trace_id']}").json()["num_requests"] == 2
    with client.websocket_connect("/ws/sessions/new") as ws:
        ws.send_text(json.dumps({"type": "configure", "v": 1,
                                 "workload": {"trace": data["trace_id"],
                                              "upload_token": UPLOAD_TOKEN}}))
        init = receive(ws)
        listed = request_list(lambda p: client.get(p).json(), init["session_id"])
        assert [r["id"] for r in listed] == ["a", "b"]
        receive_until(ws, "status")
        ws.send_text(json.dumps({"type": "seek", "v": 1, "iter": 1000}))
        done = [m for m in receive_until(ws, "status") if m["type"] == "done"]
        assert done and done[0]["summary"]["completed"] == 2


def test_errors_name_line_and_field(client):
    bad = [dict(ROWS[0]), {"id": "b", "arrival_s": 0.2, "prompt_len": -4, "output_len": 3}]
    text = "[\n" + ",\n".join(json.dumps(row) for row in bad) + "\n]\n"  # row 2 on line 3
    r = upload(client, text.encode())
    assert r.status_code == 400
    assert r.json()["detail"]["line"] == 3 and r.json()["detail"]["field"] == "prompt_len"
    r = upload(client, b"\x89PNG\r\n\x1a\n....")
    assert r.status_code == 400 and "message" in r.json()["detail"]
    r = client.post("/api/traces", content=b"abc", headers={"content-type": "text/plain"})
    assert r.status_code == 415
    assert client.get("/api/traces").json() == []


def test_size_limit_is_413_and_leaves_nothing(tmp_path, clock):
    small = make_settings(tmp_path, max_upload_bytes=1000)
    with TestClient(create_app(small, clock=clock), headers={**ORIGIN, **UPLOADS}) as client:
        r = upload(client, json.dumps(ROWS * 40).encode())
        assert r.status_code == 413
        assert client.get("/api/traces").json() == []
        assert upload(client, json.dumps(ROWS).encode()).status_code == 201
    assert list((tmp_path / "data" / "tmp").iterdir()) == []


def test_a_recording_uploads_and_replays(client, tmp_path):
    specs = [RequestSpec(f"r{i}", 30 + i, 4, arrival_step=i) for i in range(5)]
    config = EngineConfig.from_dict({"block_size": 4, "num_gpu_blocks": 64})
    path = tmp_path / "run.jsonl"
    expected = [json.loads(json.dumps(r.to_dict())) for r in Engine(config, specs).run()]
    write_recording(path, header(config, specs, "simulated"), Engine(config, specs).run())
    r = upload(client, path.read_bytes(), "run.jsonl")
    assert r.status_code == 201, r.text
    assert r.json()["format"] == "servescope-steps"
    workload = {"trace": r.json()["trace_id"], "upload_token": UPLOAD_TOKEN}
    sid = client.post("/api/sessions", json={"workload": workload}).json()
    lines = client.get(f"/api/sessions/{sid['session_id']}/export?format=jsonl").text.splitlines()
    assert [json.loads(x) for x in lines] == expected
    with client.websocket_connect(sid["ws_path"]) as ws:
        assert receive(ws)["source"] == "replayed"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(st.one_of(
    st.binary(max_size=300),
    st.lists(st.dictionaries(st.sampled_from(["id", "prompt_len", "output_len", "arrival_s",
                                              "arrival_step", "x"]),
                             st.one_of(st.integers(-5, 10**12), st.floats(), st.text(max_size=5),
                                       st.none(), st.booleans()), max_size=5),
             max_size=5).map(lambda rows: json.dumps(rows).encode())))
def test_fuzzed_uploads_never_5xx(client, body):
    r = upload(client, body)
    assert r.status_code in (201, 400, 413), r.text
    if r.status_code == 400:
        assert isinstance(r.json()["detail"]["message"], str)
    assert client.get("/healthz").status_code == 200
