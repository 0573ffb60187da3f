"""REST routes: the page's boot data and headers, presets, sessions with their limits,
summaries and exports, scenarios, the OpenAPI document; idle sessions are reaped."""

from __future__ import annotations

import csv
import io
import json
import re

from fastapi.testclient import TestClient
from support.server import ORIGIN, UPLOADS, FakeClock, make_settings, receive

from servescope.api.app import create_app

ROWS = [{"id": f"q{i}", "arrival_s": 0.01 * i, "prompt_len": 30 + i, "output_len": 5}
        for i in range(8)]


def boot(html: str) -> dict:
    found = re.search(r'<script id="boot" type="application/json">(.*?)</script>', html, re.S)
    assert found
    return json.loads(found.group(1))


def test_page_boots_a_new_session_under_a_strict_csp(client):
    r = client.get("/")
    assert r.status_code == 200
    data = boot(r.text)
    assert data["session_id"] == "new" and data["preset"] == "demo"
    assert data["ws_path"] == "/ws/sessions/new" and data["follow"] is False
    assert data["config"]["num_gpu_blocks"] == 513  # the demo preset's own config
    csp = r.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "object-src 'none'" in csp
    assert f"'nonce-{data['csp_nonce']}'" in csp and "unsafe-eval" not in csp
    assert f'nonce="{data["csp_nonce"]}"' in r.text  # the inline import map carries it
    assert "demo" in [p["name"] for p in data["presets"]]
    sid = client.post("/api/sessions", json={"workload": {"preset": "demo"}}).json()["session_id"]
    follow = boot(client.get(f"/?session={sid}&follow=1").text)
    assert follow["follow"] is True and follow["ws_path"].endswith("?follow=1")
    assert client.get("/?session=../../etc").status_code == 404
    assert client.get("/static/favicon.svg").status_code == 200
    icon = client.get("/favicon.ico")  # what a browser asks for without a <link rel=icon>
    assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg+xml")
    assert icon.content == client.get("/static/favicon.svg").content
    assert "content-security-policy" in client.get("/healthz").headers


def test_static_files_and_uplot_are_served(client):
    assert client.get("/static/js/main.js").status_code == 200
    assert client.get("/static/js/transport/index.js").status_code == 200
    r = client.get("/vendor/uplot/uPlot.esm.js")
    assert r.status_code == 200 and "uPlot" in r.text


def test_openapi_document_lists_every_route(client):
    doc = client.get("/openapi.json").json()
    paths = set(doc["paths"])
    for path in ("/api/presets", "/api/models", "/api/gpus", "/api/traces", "/api/sessions",
                 "/api/sessions/{session_id}/summary", "/api/sessions/{session_id}/export",
                 "/api/sessions/{session_id}/scenario", "/api/scenarios", "/healthz"):
        assert path in paths, path
    upload = doc["paths"]["/api/traces"]["post"]["requestBody"]["content"]
    assert "multipart/form-data" in upload


def test_sessions_summaries_exports_and_scenarios(client):
    r = client.post("/api/sessions", json={"config": {"max_num_seqs": 3},
                                           "workload": {"requests": ROWS}})
    assert r.status_code == 201, r.text
    sid = r.json()["session_id"]
    assert client.get(f"/api/sessions/{sid}").json()["num_requests"] == 8
    summary = client.get(f"/api/sessions/{sid}/summary").json()
    assert summary[0]["summary"]["completed"] == 8
    rows = list(csv.DictReader(io.StringIO(client.get(f"/api/sessions/{sid}/export?format=csv")
                                           .text)))
    assert sorted(r["id"] for r in rows) == sorted(r["id"] for r in ROWS)
    bench = client.get(f"/api/sessions/{sid}/export?format=bench").json()
    assert bench["completed"] == 8 and len(bench["ttfts"]) == 8
    assert client.get(f"/api/sessions/{sid}/export?format=xml").status_code == 400
    saved = client.post(f"/api/sessions/{sid}/scenario", json={"name": "three seqs"}).json()
    assert client.get("/api/scenarios").json()[0]["name"] == "three seqs"
    with client.websocket_connect("/ws/sessions/new") as ws:
        ws.send_text(json.dumps({"type": "configure", "v": 1,
                                 "workload": {"scenario": saved["id"]}}))
        init = receive(ws)
        assert init["config"]["max_num_seqs"] == 3 and init["num_requests"] == 8
    assert client.get("/api/sessions/nope").status_code == 404
    bad = client.post("/api/sessions", json={"config": {"block_size": 5}})
    assert bad.status_code == 400 and bad.json()["detail"]["field"] == "block_size"


def test_limits_answer_with_clear_errors(tmp_path):
    settings = make_settings(tmp_path, max_sessions=2, max_requests_per_session=5)
    app = create_app(settings, clock=FakeClock())
    with TestClient(app, headers={**ORIGIN, **UPLOADS}) as client:
        sids = []
        for _ in range(2):
            r = client.post("/api/sessions", json={"workload": {"requests": ROWS[:4]}})
            assert r.status_code == 201
            sids.append(r.json()["session_id"])
        with client.websocket_connect(f"/ws/sessions/{sids[0]}?follow=1"), \
                client.websocket_connect(f"/ws/sessions/{sids[1]}?follow=1"):  # both live
            r = client.post("/api/sessions", json={"workload": {"requests": ROWS[:4]}})
        assert r.status_code == 429 and r.json()["detail"]["code"] == "limit"
        assert "at most 2 sessions" in r.json()["detail"]["message"]
    with TestClient(create_app(make_settings(tmp_path, max_requests_per_session=5),
                               clock=FakeClock()), headers={**ORIGIN, **UPLOADS}) as client:
        r = client.post("/api/sessions", json={"workload": {"requests": ROWS}})
        assert r.status_code == 429 and "at most 5 per session" in r.json()["detail"]["message"]


def test_idle_sessions_are_reaped(tmp_path):
    clock = FakeClock()
    app = create_app(make_settings(tmp_path, session_idle_s=60), clock=clock)
    with TestClient(app, headers={**ORIGIN, **UPLOADS}) as c:
        registry = c.app.state.registry
        sid = c.post("/api/sessions", json={"workload": {"requests": ROWS}}).json()["session_id"]
        clock.advance(30)
        assert registry.reap() == []
        clock.advance(31)
        assert registry.reap() == [sid]
        assert c.get(f"/api/sessions/{sid}").status_code == 404


def test_catalogs_and_a_model_on_a_gpu_sizing_the_pool(client):
    models = client.get("/api/models").json()
    gpus = client.get("/api/gpus").json()
    assert models and gpus and all("name" in m for m in models)
    config = {"model": models[0]["name"], "gpu": gpus[0]["key"], "num_gpu_blocks": None}
    r = client.post("/api/sessions", json={"config": config, "workload": {"preset": "demo"}})
    assert r.status_code == 201, r.text
    engine = r.json()["engines"][0]
    assert engine["num_gpu_blocks"] > 1000 and engine["config"]["num_gpu_blocks"] is not None
