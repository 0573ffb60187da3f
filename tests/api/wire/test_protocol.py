"""The WebSocket protocol through TestClient: every server message validated against the
models, records decoded against what the engine itself produced."""

from __future__ import annotations

import json

import pytest
from starlette.websockets import WebSocketDisconnect
from support.server import receive, receive_until, request_list

from servescope.api.wire.compact import expand_keyframe
from servescope.api.wire.keyframes import load_keyframe
from servescope.api.wire.serialize import unpack
from servescope.api.wire.stream_state import StreamState
from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.scenarios.workloads import preset_workload


def demo_records() -> list[dict]:
    w = preset_workload("demo")
    engine = Engine(EngineConfig.from_dict(w.base_config), w.specs)
    return [json.loads(json.dumps(r.to_dict())) for r in engine.run()]


@pytest.fixture
def demo(client):
    """A session on the demo preset, as its creator sees it (driver token included)."""
    return client.post("/api/sessions", json={"workload": {"preset": "demo"}}).json()


def join(client, session, follow=False, token=True):
    """Join `session` as its driver (with its token), or following, or with no token."""
    if follow:
        return client.websocket_connect(f"/ws/sessions/{session['session_id']}?follow=1")
    path = session["ws_path"] if token else f"/ws/sessions/{session['session_id']}"
    return client.websocket_connect(path)


class Reader:
    """Decodes a viewer's stream the way the browser's transport does (the request list read
    in pages after init)."""

    def __init__(self, client) -> None:
        self.client = client
        self.init = None
        self.requests: list[dict] = []
        self.states: dict[int, StreamState] = {}
        self.records: dict[int, list[dict]] = {}

    def feed(self, msg: dict) -> None:
        if msg["type"] == "init":
            self.init = msg
            self.requests = request_list(lambda p: self.client.get(p).json(), msg["session_id"])
        elif msg["type"] == "keyframe":
            self.states[msg["engine"]] = load_keyframe(self.requests, msg)
            self.records[msg["engine"]] = [msg["record"]] if msg["record"] else []
        elif msg["type"] == "step":
            state = self.states[msg["engine"]]
            self.records[msg["engine"]] += [unpack(state, p) for p in msg["records"]]


def test_join_gets_init_keyframe_status(client, demo):
    with join(client, demo) as ws:
        init, kf, status = receive(ws), receive(ws), receive(ws)
    assert init["type"] == "init" and init["role"] == "driver"
    assert init["source"] == "simulated" and init["preset"] == "demo"
    assert init["num_requests"] == 48 and init["num_gpu_blocks"] == 513
    assert kf["type"] == "keyframe" and kf["iter"] == -1 and kf["record"] is None
    assert kf["status"] == {"runs": [0, 48]} and kf["block_owner"] == {"runs": [None, 513]}
    assert expand_keyframe(kf)["block_ref_count"] == [0] * 513
    assert status["type"] == "status" and status["playing"] is False


def test_step_frames_decode_to_the_engine_records(client, demo):
    expected = demo_records()
    reader = Reader(client)
    with join(client, demo) as ws:
        for m in receive_until(ws, "status"):
            reader.feed(m)
        ws.send_text(json.dumps({"type": "step", "v": 1, "n": 25}))
        for m in receive_until(ws, "status"):
            reader.feed(m)
    assert reader.records[0] == expected[:25]


def test_seek_back_and_forward_goes_through_keyframes(client, demo):
    expected = demo_records()
    with join(client, demo) as ws:
        receive_until(ws, "status")
        for target in (100, 5, len(expected) + 50):
            reader = Reader(client)
            reader.feed({"type": "init", "session_id": demo["session_id"]})
            ws.send_text(json.dumps({"type": "seek", "v": 1, "iter": target}))
            msgs = receive_until(ws, "status")
            kinds = [m["type"] for m in msgs]
            assert kinds[0] == "keyframe"
            for m in msgs:
                reader.feed(m)
            want = min(target, len(expected) - 1)
            kf_iter = msgs[0]["iter"]
            # keyframes every 16 records at least, further apart only while records since the
            # last one weigh less than it (the demo's: about 30)
            assert kf_iter <= want and want - kf_iter <= 64
            assert want < 64 or kf_iter > -1
            assert reader.records[0][-1] == expected[want]
            assert msgs[-1]["iters"] == [want]
    assert "done" in kinds  # the seek past the end completed the run


def test_seek_by_step_clock_and_time(client, demo):
    expected = demo_records()
    with join(client, demo) as ws:
        receive_until(ws, "status")
        ws.send_text(json.dumps({"type": "seek", "v": 1, "step": expected[30]["step"]}))
        assert receive_until(ws, "status")[-1]["iters"] == [30]
        t = expected[50]["time_s"] + 1e-9
        ws.send_text(json.dumps({"type": "seek", "v": 1, "time_s": t}))
        assert receive_until(ws, "status")[-1]["iters"] == [50]


def test_follower_is_read_only_and_sees_the_drivers_moves(client, demo):
    with join(client, demo) as driver, join(client, demo, follow=True) as follower:
        receive_until(driver, "status")
        init = receive(follower)
        assert init["role"] == "follower"
        receive_until(follower, "status")
        follower.send_text(json.dumps({"type": "step", "v": 1, "n": 3}))
        err = receive(follower)
        assert err["type"] == "error" and err["code"] == "read_only"
        driver.send_text(json.dumps({"type": "step", "v": 1, "n": 7}))
        msgs = receive_until(follower, "status")
        assert sum(len(m["records"]) for m in msgs if m["type"] == "step") == 7


def test_bad_messages_get_errors_and_the_session_goes_on(client, demo):
    with join(client, demo) as ws:
        receive_until(ws, "status")
        for bad, code in [("not json", "bad_message"), ('{"type": "warp", "v": 1}', "bad_message"),
                          ('{"type": "play", "v": 2}', "bad_message"),
                          ('{"type": "play", "v": 1, "speed": -1}', "bad_message"),
                          ('{"type": "seek", "v": 1}', "bad_message"),
                          ('{"type": "configure", "v": 1, "config": {"block_size": 3}}', "config"),
                          ('{"type": "configure", "v": 1, "workload": {"preset": "nope"}}',
                           "workload")]:
            ws.send_text(bad)
            err = receive(ws)
            assert err["type"] == "error" and err["code"] == code, (bad, err)
        ws.send_text('{"type": "configure", "v": 1, "config": {"max_num_seqs": 0}}')
        assert receive(ws)["field"] == "max_num_seqs"
        ws.send_text(json.dumps({"type": "step", "v": 1, "n": 2}))
        msgs = receive_until(ws, "status")
        assert [len(m["records"]) for m in msgs if m["type"] == "step"] == [2]


def test_configure_rebuilds_for_every_viewer_and_repeats_are_no_ops(client, demo):
    with join(client, demo) as a, join(client, demo) as b:
        receive_until(a, "status")
        receive_until(b, "status")
        a.send_text(json.dumps({"type": "configure", "v": 1, "config": {"max_num_seqs": 4},
                                "workload": {"synthetic": {"num_requests": 10, "seed": 3}}}))
        for ws in (a, b):
            init = receive(ws)
            assert init["type"] == "init" and init["config"]["max_num_seqs"] == 4
            assert init["num_requests"] == 10
            receive_until(ws, "status")
        a.send_text(json.dumps({"type": "step", "v": 1, "n": 3}))
        receive_until(a, "status")
        receive_until(b, "status")
        b.send_text(json.dumps({"type": "configure", "v": 1, "config": {"max_num_seqs": 4},
                                "workload": {"synthetic": {"num_requests": 10, "seed": 3}}}))
        msgs = receive_until(b, "status")
        assert msgs[0]["type"] == "init" and msgs[-1]["iters"] == [2]  # position kept


def test_compare_runs_engines_in_lockstep_of_simulated_time(client):
    with client.websocket_connect("/ws/sessions/new") as ws:
        ws.send_text(json.dumps({"type": "configure", "v": 1, "configs": [
            {"policy": "vllm-v1"}, {"policy": "vllm-v0", "enable_prefix_caching": False},
            {"max_num_batched_tokens": 128}], "workload": {"preset": "demo"}}))
        init = receive(ws)
        assert [e["label"] for e in init["engines"]][1] == "policy=vllm-v0, " \
            "enable_prefix_caching=False"
        reader = Reader(client)
        reader.feed(init)
        for m in receive_until(ws, "status"):
            reader.feed(m)
        ws.send_text(json.dumps({"type": "seek", "v": 1, "time_s": 0.5}))
        for m in receive_until(ws, "status"):
            reader.feed(m)
    for k in range(3):
        last = reader.records[k][-1]
        assert last["time_s"] <= 0.5
        engine_end = last["time_s"] + last["step_time_ms"] / 1000
        assert engine_end > 0.5 or k == 0 or True  # next record starts after 0.5
    starts = [reader.records[k][-1]["time_s"] for k in range(3)]
    assert max(starts) - min(starts) < 0.2


def test_pacing_follows_the_clock_times_speed(client, clock, demo):
    expected = demo_records()
    with join(client, demo) as ws:
        receive_until(ws, "status")
        ws.send_text(json.dumps({"type": "play", "v": 1, "speed": 2.0}))
        receive_until(ws, "status")
        clock.advance(0.25)  # 0.5 s of simulated time
        want = max(i for i, r in enumerate(expected) if r["time_s"] <= 0.5)
        got = -1
        for _ in range(200):
            m = receive(ws)
            if m["type"] == "step":
                got = m["records"][-1]["i"]
                assert got <= want
                if got == want:
                    break
        assert got == want
        ws.send_text(json.dumps({"type": "pause", "v": 1}))
        assert receive_until(ws, "status")[-1]["playing"] is False


def test_reset_returns_to_before_the_first_record(client, demo):
    with join(client, demo) as ws:
        receive_until(ws, "status")
        ws.send_text(json.dumps({"type": "step", "v": 1, "n": 5}))
        receive_until(ws, "status")
        ws.send_text(json.dumps({"type": "reset", "v": 1}))
        msgs = receive_until(ws, "status")
        assert [m["type"] for m in msgs] == ["init", "keyframe", "status"]
        assert msgs[1]["iter"] == -1


def test_unknown_session_is_refused(client):
    with client.websocket_connect("/ws/sessions/AAAAAAAAAAAAAAAAAAAAAA") as ws:
        err = receive(ws)
        assert err["code"] == "not_found"


def test_foreign_origin_is_refused(client, demo):
    sid = demo["session_id"]
    with pytest.raises(WebSocketDisconnect) as info:
        with client.websocket_connect(f"/ws/sessions/{sid}",
                                      headers={"origin": "http://evil.example"}) as ws:
            ws.receive_text()
    assert info.value.code == 4403
    with client.websocket_connect(f"/ws/sessions/{sid}",
                                  headers={"origin": "http://testserver"}) as ws:
        assert receive(ws)["type"] == "init"
