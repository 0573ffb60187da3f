"""Issue 33 (6, and the smaller findings): every request's Host must be a name the server is
served by, reads included, so a DNS-rebinding page reads nothing; the QR code names the room's
public address whatever Host asked; JSON 990 deep, a model of 0 heads or layers and a 3,000
character Host answer 4xx, never 500."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect
from support.hostile import FEW, HF
from support.server import make_settings, receive

from servescope.api.app import create_app

pytestmark = pytest.mark.hostile

DEEP = 990
REBOUND = {"host": "evil.example:8000", "origin": "http://evil.example:8000"}


def make_session(client) -> str:
    r = client.post("/api/sessions", json={"workload": FEW})
    assert r.status_code == 201, r.text
    return str(r.json()["session_id"])


def test_reads_by_a_host_the_server_does_not_serve_are_refused(client) -> None:
    sid = make_session(client)
    for path in ("/api/traces", f"/api/sessions/{sid}", f"/api/sessions/{sid}/summary",
                 "/api/scenarios", "/metrics", "/healthz"):
        assert client.get(path, headers={"host": "localhost:8000"}).status_code == 200, path
        r = client.get(path, headers=REBOUND)
        assert r.status_code == 421 and r.json()["detail"]["field"] == "host", path
    # the page's shell still loads, so that it can say why
    r = client.get(f"/?session={sid}", headers=REBOUND)
    assert r.status_code == 200 and sid not in r.text
    assert client.get("/api/origin", params={"origin": "http://evil.example:8000"},
                      headers=REBOUND).json()["allowed"] is False


def test_a_socket_by_a_host_the_server_does_not_serve_is_refused(client) -> None:
    sid = make_session(client)
    with pytest.raises(WebSocketDisconnect) as refused:
        with client.websocket_connect(f"/ws/sessions/{sid}?follow=1",
                                      headers={"host": "evil.example"}) as ws:
            ws.receive_text()
    assert refused.value.code == 4403


def test_the_qr_code_names_the_public_address_whatever_the_host(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, classroom=True, public_address="127.0.0.2")
    with TestClient(create_app(settings), base_url="http://127.0.0.1:8000",
                    raise_server_exceptions=False) as room:
        sid = make_session(room)
        qr = room.get(f"/api/sessions/{sid}/follow-qr.svg").content
        assert qr.startswith(b"<svg")
        for host in ("localhost:8000", "127.0.0.2:8000", "[::1]:8000"):
            assert room.get(f"/api/sessions/{sid}/follow-qr.svg",
                            headers={"host": host}).content == qr, host
        r = room.get(f"/api/sessions/{sid}/follow-qr.svg", headers={"host": "a" * 3000})
        assert r.status_code == 421


def test_json_990_deep_is_a_422(client) -> None:
    for body in ("[" * DEEP + "]" * DEEP, '{"config": ' * DEEP + "{}" + "}" * DEEP):
        r = client.post("/api/sessions", content=body,
                        headers={"content-type": "application/json"})
        assert r.status_code == 422 and "nested deeper" in r.json()["detail"]["message"]
    with client.websocket_connect("/ws/sessions/new") as ws:
        ws.send_text('{"type": "configure", "v": 1, "config": ' + "[" * DEEP + "]" * DEEP + "}")
        error = receive(ws)
        assert error["type"] == "error" and "nested deeper" in error["message"]


@pytest.mark.parametrize("field", ["num_attention_heads", "num_hidden_layers",
                                   "num_key_value_heads", "hidden_size"])
def test_a_model_with_none_of_a_count_is_a_400_on_model_config(client, field: str) -> None:
    config = {"model": "mine", "gpu": "H100", "model_config": {**HF, field: 0}}
    r = client.post("/api/sessions", json={"config": config, "workload": FEW})
    assert r.status_code == 400 and r.json()["detail"]["field"] == "model_config", r.text
    assert field in r.json()["detail"]["message"]
    ok = client.post("/api/sessions", json={"config": {**config, "model_config": HF},
                                            "workload": FEW})
    assert ok.status_code == 201, ok.text


def test_heads_wider_than_the_model_are_a_400(client) -> None:
    config = {"model": "mine", "gpu": "H100",
              "model_config": {**HF, "hidden_size": 2, "num_attention_heads": 4}}
    r = client.post("/api/sessions", json={"config": config, "workload": FEW})
    assert r.status_code == 400 and "head_dim" in r.json()["detail"]["message"]
    assert json.dumps(r.json())  # an answer, not a traceback
