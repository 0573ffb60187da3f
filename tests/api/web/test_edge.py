"""The edge: NaN, Infinity and huge numbers anywhere in a REST body or a socket message are a 4xx
or an error frame naming the field; contradictory bodies are a 4xx; every error, crashes
included, is JSON with the security headers; cross-site writes and foreign Origins refused."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect
from support.server import make_settings, receive, receive_until

from servescope.api.app import create_app
from servescope.api.deps import get_store
from servescope.api.web import edge

BAD_BODIES = [  # (path, raw JSON body, the field the answer must name)
    ("/api/sessions", '{"workload":{"synthetic":{"request_rate":NaN}}}',
     "workload.synthetic.request_rate"),
    ("/api/sessions", '{"config":{"watermark":Infinity}}', "config.watermark"),
    ("/api/sessions", '{"configs":[{},{"max_num_seqs":1e999}]}', "configs.1.max_num_seqs"),
    ("/api/sessions", '{"config":{"num_gpu_blocks":' + "9" * 400 + "}}",
     "config.num_gpu_blocks"),
    ("/api/sessions", '{"config":{"watermark":-1e16}}', "config.watermark"),
    ("/api/sessions/{sid}/scenario", '{"name":NaN}', "name"),
    ("/api/sessions/{sid}/scenario", '{"config":NaN}', "config"),
    ("/api/sessions/{sid}/scenario", '{"config":{"watermark":-Infinity}}', "config.watermark"),
]


def test_loads_names_the_first_bad_field():
    assert edge.loads('{"a":[1,2.5,{"b":-3}]}') == {"a": [1, 2.5, {"b": -3}]}
    for text, field in (('{"a":[1,NaN]}', "a.1"), ('[{"x":{"y":1e400}}]', "0.x.y"),
                        ("Infinity", ""), ('{"n":' + "1" * 50 + "}", "n")):
        with pytest.raises(edge.NotFinite) as info:
            edge.loads(text)
        assert info.value.field == field


@pytest.mark.parametrize(("path", "body", "field"), BAD_BODIES)
def test_non_finite_numbers_in_a_body_are_a_422_naming_the_field(client, path, body, field):
    sid = new_session(client)["session_id"]
    r = client.post(path.format(sid=sid), content=body,
                    headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text
    assert r.json()["detail"]["field"] == field
    assert r.headers["x-content-type-options"] == "nosniff"


def test_text_that_reads_as_nan_is_refused_by_the_workload(client):
    r = client.post("/api/sessions", json={"workload": {"synthetic": {"request_rate": "nan"}}})
    assert r.status_code == 400 and r.json()["detail"]["field"] == "request_rate"


def test_config_and_configs_together_are_a_422(client):
    r = client.post("/api/sessions", json={"config": {}, "configs": [{}, {}]})
    assert r.status_code == 422 and "not both" in r.text


def test_a_json_body_over_the_limit_is_a_413(tmp_path):
    app = create_app(make_settings(tmp_path, max_message_bytes=1000))
    with TestClient(app, headers={"origin": "http://testserver"}) as c:
        r = c.post("/api/sessions", json={"workload": {"requests": [{"id": "x" * 2000}]}})
        assert r.status_code == 413 and r.json()["detail"]["code"] == "limit"


def test_a_crash_is_a_json_500_with_the_security_headers(tmp_path):
    app = create_app(make_settings(tmp_path))

    def broken() -> None:
        raise RuntimeError("a bug")

    app.dependency_overrides[get_store] = broken
    with TestClient(app, raise_server_exceptions=False) as c:
        r = c.get("/api/traces")
        assert r.status_code == 500 and r.json()["detail"]["code"] == "internal"
        assert "default-src 'self'" in r.headers["content-security-policy"]


@pytest.mark.parametrize(("text", "field"), [
    ('{"type":"configure","v":1,"config":{"watermark":NaN}}', "config.watermark"),
    ('{"type":"configure","v":1,"workload":{"preset":"demo"},'
     '"config":{"static_window_s":Infinity}}', "config.static_window_s"),
    ('{"type":"play","v":1,"speed":1e999}', "speed"),
])
def test_non_finite_numbers_in_a_socket_message_are_an_error_frame(client, text, field):
    with client.websocket_connect("/ws/sessions/new") as ws:
        ws.send_text(text)
        err = receive(ws)
        assert err["type"] == "error" and err["field"] == field
        ws.send_text(json.dumps({"type": "configure", "v": 1, "workload": {"preset": "demo"}}))
        assert receive_until(ws, "status")[0]["type"] == "init"  # the session lives on


def new_session(client) -> dict:
    r = client.post("/api/sessions", json={"workload": {"preset": "demo"}})
    assert r.status_code == 201, r.text
    return r.json()


def refused(client, path: str, **headers: str) -> int:
    with pytest.raises(WebSocketDisconnect) as info:
        with client.websocket_connect(path, headers=headers) as ws:
            ws.receive_text()
    return info.value.code


def test_dns_rebinding_and_missing_origin_cannot_drive(tmp_path):
    app = create_app(make_settings(tmp_path))
    with TestClient(app) as c:  # no default Origin
        session = new_session(c)
        sid, path = session["session_id"], session["ws_path"]  # the creator's, with its token
        rebinding = {"host": "attacker.example:8000", "origin": "http://attacker.example:8000"}
        assert refused(c, path, **rebinding) == 4403
        assert refused(c, path) == 4403  # no Origin: not a page of ours, may not drive
        assert refused(c, path, origin="http://testserver:1234") == 4403  # another port
        with c.websocket_connect(f"/ws/sessions/{sid}?follow=1") as ws:  # a script may follow
            assert receive(ws)["role"] == "follower"
        with c.websocket_connect(path, headers={"origin": "http://testserver"}) as ws:
            assert receive(ws)["role"] == "driver"


def test_an_allowed_origin_from_the_settings_may_drive(tmp_path):
    app = create_app(make_settings(tmp_path, allowed_origins=("https://class.example",)))
    with TestClient(app) as c:
        path = new_session(c)["ws_path"]
        with c.websocket_connect(path, headers={"origin": "https://class.example"}) as ws:
            assert receive(ws)["role"] == "driver"


def test_cross_site_writes_are_refused_and_store_nothing(tmp_path):
    app = create_app(make_settings(tmp_path))
    rows = json.dumps([{"id": "a", "arrival_s": 0.0, "prompt_len": 4, "output_len": 2}]).encode()
    with TestClient(app) as c:
        # (status, field): a DNS-rebinding page's Host is no name this server serves
        for headers, refused in (({"origin": "http://evil.example"}, (403, "origin")),
                                 ({"sec-fetch-site": "cross-site"}, (403, "origin")),
                                 ({"origin": "http://attacker.example",
                                   "host": "attacker.example"}, (421, "host"))):
            r = c.post("/api/traces", files={"file": ("t.json", rows)}, headers=headers)
            assert (r.status_code, r.json()["detail"]["field"]) == refused, headers
            r = c.post("/api/sessions", json={"workload": {"preset": "demo"}}, headers=headers)
            assert r.status_code == refused[0]
        assert c.get("/api/traces", headers={"origin": "http://evil.example"}).json() == []
        assert c.post("/api/traces", files={"file": ("t.json", rows)}).status_code == 201


def test_a_browsers_write_needs_the_pages_csrf_token(tmp_path):
    app = create_app(make_settings(tmp_path))
    rows = json.dumps([{"id": "a", "arrival_s": 0.0, "prompt_len": 4, "output_len": 2}]).encode()
    page = {"origin": "http://testserver", "sec-fetch-site": "same-origin"}
    with TestClient(app) as c:
        r = c.post("/api/traces", files={"file": ("t.json", rows)}, headers=page)
        assert r.status_code == 403 and r.json()["detail"]["field"] == "csrf"  # no page loaded
        cookie = c.get("/").headers["set-cookie"]
        assert "servescope_csrf=" in cookie and "samesite=strict" in cookie.lower()
        token = c.cookies[edge.CSRF_COOKIE]
        r = c.post("/api/traces", files={"file": ("t.json", rows)},
                   headers={**page, "x-csrf-token": "forged"})
        assert r.status_code == 403 and r.json()["detail"]["field"] == "csrf"
        r = c.post("/api/traces", files={"file": ("t.json", rows)},
                   headers={"sec-fetch-site": "cross-site", "x-csrf-token": token})
        assert r.status_code == 403  # the Origin check still holds with the token
        r = c.post("/api/traces", files={"file": ("t.json", rows)},
                   headers={**page, "x-csrf-token": token})
        assert r.status_code == 201
        assert "set-cookie" not in c.get("/explain").headers  # kept: other tabs' token holds
        c.cookies.clear()
        r = c.post("/api/traces", files={"file": ("t.json", rows)})  # a script, no cookie
        assert r.status_code == 201
