"""The page's classroom parts: the boot data and the follow QR code name the server's public
address (never the asker's Host), and GET /api/origin says whether and why a page's origin is
refused, as the session socket decides it."""

from __future__ import annotations

import io
import json
import re

import pytest
import segno
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect
from support.server import make_settings, receive

from servescope.api.app import create_app

PUBLIC = "http://127.0.0.2:8000"


@pytest.fixture
def room(tmp_path):
    """A classroom app advertising 127.0.0.2 (the stand-in for a LAN address)."""
    app = create_app(make_settings(tmp_path, classroom=True, public_address="127.0.0.2"))
    with TestClient(app, base_url="http://127.0.0.1:8000") as c:
        yield c


def boot(html: str) -> dict:
    found = re.search(r'<script id="boot" type="application/json">(.*?)</script>', html, re.S)
    assert found
    return json.loads(found.group(1))


def qr_svg(url: str) -> bytes:
    out = io.BytesIO()
    segno.make(url, error="m").save(out, kind="svg", scale=6, border=2, xmldecl=False,
                                    dark="#000", light="#fff")
    return out.getvalue()


def test_the_page_and_the_qr_code_name_the_public_address_whatever_the_host(room):
    assert boot(room.get("/").text)["public_url"] == PUBLIC
    sid = room.post("/api/sessions", json={"workload": {"preset": "demo"}}).json()["session_id"]
    for host in ("127.0.0.1:8000", "localhost", "127.0.0.2:8000"):
        r = room.get(f"/api/sessions/{sid}/follow-qr.svg", headers={"host": host})
        assert r.content == qr_svg(f"{PUBLIC}/?session={sid}&follow=1"), host
    refused = room.get(f"/api/sessions/{sid}/follow-qr.svg", headers={"host": "attacker.example"})
    assert refused.status_code == 421 and refused.json()["detail"]["field"] == "host"


def test_without_a_public_address_the_qr_code_names_a_served_name_not_the_host(client):
    assert boot(client.get("/").text)["public_url"] is None  # links: the page's own address
    sid = client.post("/api/sessions", json={"workload": {"preset": "demo"}}).json()["session_id"]
    r = client.get(f"/api/sessions/{sid}/follow-qr.svg", headers={"host": "localhost:8000"})
    # make_settings serves "testserver" (Settings.server_names); the port is Settings.port's
    assert r.content == qr_svg(f"http://testserver:8000/?session={sid}&follow=1")


def test_the_origin_check_answers_as_the_socket_decides(room):
    ok = room.get("/api/origin", params={"origin": "http://127.0.0.2:8000"},
                  headers={"host": "127.0.0.2:8000"}).json()
    assert ok == {"allowed": True, "reason": None}
    no = room.get("/api/origin", params={"origin": "http://127.0.0.3:8000"},
                  headers={"host": "127.0.0.3:8000"}).json()
    assert no["allowed"] is False
    assert no["reason"].startswith("This server does not accept pages opened at "
                                   "http://127.0.0.3:8000 — open http://127.0.0.2:8000/ instead")
    with pytest.raises(WebSocketDisconnect) as refused:
        with room.websocket_connect("/ws/sessions/new", headers={
                "host": "127.0.0.3:8000", "origin": "http://127.0.0.3:8000"}) as ws:
            ws.receive_text()
    assert refused.value.code == 4403
    with room.websocket_connect("/ws/sessions/new", headers={
            "host": "127.0.0.2:8000", "origin": "http://127.0.0.2:8000"}) as ws:
        ws.send_text(json.dumps({"type": "configure", "v": 1, "workload": {"preset": "demo"}}))
        assert receive(ws)["role"] == "driver"


def test_the_origin_check_bounds_what_it_is_given(room):
    assert room.get("/api/origin", params={"origin": "x" * 201}).status_code == 422
    assert room.get("/api/origin").status_code == 422
