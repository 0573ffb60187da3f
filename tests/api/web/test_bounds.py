"""Bounds a visitor cannot lift: a KV pool (given, or derived from model, GPU and block_size)
over max_gpu_blocks is refused naming the field and the cap before anything is allocated;
requests per session are capped by a setting; a socket message over the limit closes the socket
with 1009 (the transport reads no further) and the session lives on for its token."""

from __future__ import annotations

import asyncio
import json

import pytest
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect
from support.live import Client
from support.server import ORIGIN, Server, make_settings, receive, receive_until
from websockets.exceptions import ConnectionClosed

from servescope.api.app import create_app
from servescope.api.wire.compact import expand_keyframe

LLAMA_B200_TP8 = {"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "B200",
                  "tensor_parallel_size": 8, "block_size": 1, "num_gpu_blocks": None}


@pytest.mark.parametrize(("config", "derived"), [
    ({"num_gpu_blocks": 1_000_000_000}, False),
    (LLAMA_B200_TP8, True),
])
def test_a_pool_over_the_cap_is_refused_naming_field_and_cap(client, config, derived):
    r = client.post("/api/sessions", json={"config": config, "workload": {"preset": "demo"}})
    assert r.status_code == 400, r.text
    detail = r.json()["detail"]
    assert detail["field"] == "num_gpu_blocks"
    assert "cap of 1,000,000 (max_gpu_blocks)" in detail["message"]
    assert ("B200" in detail["message"]) == derived
    with client.websocket_connect("/ws/sessions/new") as ws:
        ws.send_text(json.dumps({"type": "configure", "v": 1, "config": config,
                                 "workload": {"preset": "demo"}}))
        err = receive(ws)
        assert err["type"] == "error" and err["field"] == "num_gpu_blocks"
        ws.send_text(json.dumps({"type": "configure", "v": 1, "workload": {"preset": "demo"}}))
        assert receive_until(ws, "init")[-1]["type"] == "init"  # the next configure works


def test_compare_names_the_engine_and_the_cap_is_a_setting(tmp_path):
    app = create_app(make_settings(tmp_path, max_gpu_blocks=300))
    with TestClient(app, headers=ORIGIN) as c:
        r = c.post("/api/sessions", json={"configs": [{"num_gpu_blocks": 200},
                                                      {"num_gpu_blocks": 400}],
                                          "workload": {"preset": "demo"}})
        assert r.status_code == 400 and r.json()["detail"]["field"] == "configs[1].num_gpu_blocks"
        r = c.post("/api/sessions", json={"config": {"num_gpu_blocks": 300},
                                          "workload": {"preset": "demo"}})
        assert r.status_code == 201


def test_a_fleet_replica_over_the_cap_is_refused_naming_its_entry(tmp_path):
    app = create_app(make_settings(tmp_path, max_gpu_blocks=300))
    fleet = {"replicas": 2, "router": "round-robin", "num_gpu_blocks": 200,
             "replica_configs": [{}, {"num_gpu_blocks": 5_000_000}]}
    with TestClient(app, headers=ORIGIN) as c:
        r = c.post("/api/sessions", json={"config": fleet, "workload": {"preset": "demo"}})
        assert r.status_code == 400, r.text
        detail = r.json()["detail"]
        assert detail["field"] == "replica_configs[1].num_gpu_blocks"
        assert "cap of 300 (max_gpu_blocks)" in detail["message"]
        fleet["replica_configs"][1] = {"num_gpu_blocks": 250}
        r = c.post("/api/sessions", json={"config": fleet, "workload": {"preset": "demo"}})
        assert r.status_code == 201, r.text


def test_an_oversized_socket_message_closes_1009_and_the_session_lives_on(tmp_path):
    app = create_app(make_settings(tmp_path, max_message_bytes=10_000))
    with TestClient(app, headers=ORIGIN) as c:
        with c.websocket_connect("/ws/sessions/new") as ws:
            ws.send_text(json.dumps({"type": "configure", "v": 1,
                                     "workload": {"preset": "demo"}}))
            init = receive_until(ws, "init")[-1]
            ws.send_text(json.dumps({"type": "configure", "v": 1, "workload": {
                "requests": [{"id": f"r{i}", "prompt_len": 8, "output_len": 2}
                             for i in range(1000)]}}))
            with pytest.raises(WebSocketDisconnect) as closed:
                receive_until(ws, "never")
            assert closed.value.code == 1009
        path = f"/ws/sessions/{init['session_id']}?token={init['token']}"
        with c.websocket_connect(path) as ws:  # the page reconnects with its token
            again = receive_until(ws, "init")[-1]
            assert again["session_id"] == init["session_id"] and again["role"] == "driver"


def test_a_real_server_closes_1009_past_the_limit_without_reading_on(tmp_path):
    limit = 64 * 1024
    server = Server(tmp_path / "data", SERVESCOPE_MAX_MESSAGE_BYTES=str(limit))

    async def scenario() -> None:
        async with Client(f"{server.ws_url}/ws/sessions/new") as c:
            await c.send(type="configure", workload={"preset": "demo"})
            init = await c.until(lambda m: m["type"] == "init")
            await c.ws.send(json.dumps({"type": "configure", "v": 1, "pad": " " * limit}))
            with pytest.raises(ConnectionClosed) as closed:
                while True:
                    await c.recv()
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
        url = f"{server.ws_url}/ws/sessions/{init['session_id']}?token={init['token']}"
        async with Client(url) as again:  # the session lives on
            msg = await again.until(lambda m: m["type"] == "init")
            assert msg["role"] == "driver"
            await again.send(type="configure", workload={"preset": "demo"})
            await again.until(lambda m: m["type"] == "init")

    try:
        asyncio.run(scenario())
    finally:
        server.stop()


def test_a_big_pools_keyframe_is_sent_compactly(client):
    blocks = 200_000
    with client.websocket_connect("/ws/sessions/new") as ws:
        ws.send_text(json.dumps({"type": "configure", "v": 1,
                                 "config": {"num_gpu_blocks": blocks},
                                 "workload": {"preset": "demo"}}))
        receive_until(ws, "status")
        # blocks in use; past the first keyframe, which waits for records to weigh a quarter
        # byte per block (api/sessions/track.py, keyframe_cost)
        ws.send_text(json.dumps({"type": "seek", "v": 1, "iter": 180}))  # of 192
        texts = []
        while not texts or json.loads(texts[-1])["type"] != "status":
            texts.append(ws.receive_text())
    kf_text = next(t for t in texts if json.loads(t)["type"] == "keyframe")
    kf = json.loads(kf_text)
    plain = expand_keyframe(kf)
    assert len(plain["block_owner"]) == blocks and sum(plain["block_ref_count"]) > 0
    assert 0 <= kf["iter"] <= 180 and any(b for _, b in plain["tables"])
    assert len(kf_text) * 50 < len(json.dumps(plain))
    assert len(kf_text) < 20_000
