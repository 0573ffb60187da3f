"""Issue 33 (4): text that always serialises. A lone surrogate ("\\ud800" in JSON) is refused
at the edge on every route and socket; one that got in anyway (a row an older server stored, a
session built past the edge) never breaks /metrics or a shared listing, and nothing is committed
whose answer cannot be written. /metrics' labels stay bounded whatever clients send."""

from __future__ import annotations

import json
import re

import pytest
from support.hostile import FEW, HF
from support.server import receive

from servescope.api.reports.metrics import short_label
from servescope.api.wire import protocol as P

pytestmark = pytest.mark.hostile

LONE = "\ud800"
SURROGATE_MODEL = '{"config": {"model": "\\ud800"}}'  # JSON's escape: one unpaired surrogate


def test_a_lone_surrogate_is_refused_by_field_over_rest_and_the_socket(client) -> None:
    r = client.post("/api/sessions", content=SURROGATE_MODEL,
                    headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["detail"]["field"] == "config.model"
    r = client.post("/api/sessions", content='{"workload": {"\\udfff": 1}}',
                    headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["detail"]["field"].startswith("workload.")
    with client.websocket_connect("/ws/sessions/new") as ws:
        ws.send_text('{"type": "configure", "v": 1, "config": {"model": "\\ud800"}}')
        error = receive(ws)
        assert error["type"] == "error" and error["field"] == "config.model"
        ws.send_text(json.dumps({"type": "configure", "v": 1, "workload": FEW}))
        assert receive(ws)["type"] == "init"  # the socket lives on


def session_past_the_edge(client) -> str:
    """A session whose model name holds a lone surrogate (built without the edge)."""
    registry = client.app.state.registry
    msg = P.Configure(type="configure", workload=P.WorkloadSpec(**FEW),
                      config={"model": f"mine{LONE}", "gpu": "H100", "model_config": HF})
    return str(client.portal.call(registry.create_configured, msg).id)


def test_a_surrogate_past_the_edge_never_breaks_metrics(client) -> None:
    session_past_the_edge(client)
    for _ in range(2):  # and again: a scrape that failed once would fail every time
        r = client.get("/metrics")
        assert r.status_code == 200
        assert 'servescope_session_info{' in r.text
        assert re.search(r'model_name="cfg-[0-9a-f]{12}"', r.text), r.text[:2000]


def test_nothing_is_committed_whose_answer_cannot_be_written(client) -> None:
    sid = session_past_the_edge(client)
    r = client.post(f"/api/sessions/{sid}/scenario", json={"name": "bad"})
    assert r.status_code == 400 and r.json()["detail"]["field"] == "configs"
    assert client.get("/api/scenarios").json() == []


def test_a_listing_skips_a_row_it_cannot_write(client) -> None:
    store = client.app.state.store
    good = store.save_scenario("good", {"configs": [{}], "workload": {"preset": "demo"}})
    # a row as an older server committed it: the body's JSON holds an escaped lone surrogate
    store.db.execute("INSERT INTO scenarios VALUES (?, ?, ?, ?)",
                     ("AAAAAAAAAAAAAAAAAAAAAA", "bad", json.dumps({"workload": {
                         "requests": [{"id": LONE}]}}), 0.0))
    store.db.commit()
    r = client.get("/api/scenarios")
    assert r.status_code == 200 and [s["id"] for s in r.json()] == [good["id"]]
    assert client.get("/api/scenarios/AAAAAAAAAAAAAAAAAAAAAA").status_code == 404


def test_300_made_up_methods_add_no_metrics_series(client) -> None:
    def series() -> set[str]:
        text = client.get("/metrics").text
        return {line.rsplit(" ", 1)[0] for line in text.splitlines()
                if line.startswith("http_request")}

    assert client.request("BREW", "/healthz").status_code >= 400  # the "other" series now exist
    assert client.request("BREW", "/api/presets").status_code >= 400
    before = series()
    for k in range(300):
        client.request(f"X{k:03d}" + "A" * 200, "/api/presets")
    after = series()
    assert after == before, sorted(after - before)[:3]
    assert not any("X000" in s for s in after)


def test_a_label_is_the_name_itself_when_short_else_a_digest() -> None:
    assert short_label("max_num_seqs=8") == "max_num_seqs=8"
    assert short_label("meta-llama/Llama-3.1-8B-Instruct") == "meta-llama/Llama-3.1-8B-Instruct"
    whole_config = "model_config=" + json.dumps({f"k{i}": i for i in range(200_000)})
    for text in (whole_config, f"mine{LONE}", "a\nb"):
        label = short_label(text)
        assert re.fullmatch(r"cfg-[0-9a-f]{12}", label), label
    assert short_label(whole_config) != short_label(whole_config + " ")


def test_an_uploaded_request_id_with_a_lone_surrogate_is_refused_and_not_stored(client) -> None:
    rows = '[{"id": "\\ud800", "arrival_s": 0.0, "prompt_len": 4, "output_len": 2}]'
    r = client.post("/api/traces", files={"file": ("t.json", rows.encode())})
    assert r.status_code == 400 and r.json()["detail"]["field"] == "id", r.text
    assert client.get("/api/traces").json() == []


def test_a_scenario_name_with_a_lone_surrogate_is_refused_by_field(client) -> None:
    sid = client.post("/api/sessions", json={"workload": FEW}).json()["session_id"]
    r = client.post(f"/api/sessions/{sid}/scenario", content='{"name": "a\\udc00"}',
                    headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["detail"]["field"] == "name"
    assert client.get("/api/scenarios").json() == []
