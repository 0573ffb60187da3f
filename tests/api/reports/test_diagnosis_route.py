"""GET /api/sessions/{id}/diagnosis: a preset session diagnosed, compare engines, unknown ids."""

from __future__ import annotations

from fastapi.testclient import TestClient

KINDS = {"kv_starvation", "batch_slots", "token_budget", "decode_floor", "memory_fit"}


def _session(client: TestClient, preset: str, configs: list | None = None) -> str:
    body: dict = {"workload": {"preset": preset}}
    if configs:
        body["configs"] = configs
    r = client.post("/api/sessions", json=body)
    assert r.status_code == 201, r.text
    return r.json()["session_id"]


def test_preset_session_names_a_known_verdict_with_evidence(client: TestClient) -> None:
    sid = _session(client, "kv-starvation")
    r = client.get(f"/api/sessions/{sid}/diagnosis")
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["dominant"] == "kv_starvation"
    assert data["complete"] is True and data["num_records"] > 0
    assert data["source"] == "simulated"
    top = data["verdicts"][0]
    assert top["kind"] in KINDS
    assert top["evidence"] and all({"name", "value", "text"} <= set(e) for e in top["evidence"])
    assert [rec["flag"] for rec in top["recommendations"]]
    # without check=true no knob is re-simulated
    assert all(rec["expected"] is None for rec in top["recommendations"])


def test_check_re_simulates_the_dominant_knobs(client: TestClient) -> None:
    sid = _session(client, "batch-slots")
    data = client.get(f"/api/sessions/{sid}/diagnosis", params={"check": "true"}).json()
    dominant = next(v for v in data["verdicts"] if v["kind"] == data["dominant"])
    assert any(rec["expected"] and rec["expected"]["checked"]
               for rec in dominant["recommendations"])


def test_compare_session_takes_an_engine(client: TestClient) -> None:
    sid = _session(client, "kv-starvation", [{}, {"num_gpu_blocks": 4096}])
    first = client.get(f"/api/sessions/{sid}/diagnosis").json()
    second = client.get(f"/api/sessions/{sid}/diagnosis", params={"engine": 1}).json()
    assert first["engine"] == 0 and second["engine"] == 1
    assert first["dominant"] == "kv_starvation" and second["dominant"] != "kv_starvation"
    past = client.get(f"/api/sessions/{sid}/diagnosis", params={"engine": 2})
    assert past.status_code == 404
    assert past.json()["detail"]["field"] == "engine"
    assert "0..1" in past.json()["detail"]["message"]
    # past the four engines a session can have: refused before the session is asked
    bad = client.get(f"/api/sessions/{sid}/diagnosis", params={"engine": 4})
    assert bad.status_code == 422
    assert [e["loc"] for e in bad.json()["detail"]] == [["query", "engine"]]


def test_unknown_session_is_404(client: TestClient) -> None:
    r = client.get("/api/sessions/no-such-session/diagnosis")
    assert r.status_code == 404
    assert r.json()["detail"]["code"] == "not_found"


def test_perfetto_export_is_a_trace_event_object(client: TestClient) -> None:
    sid = _session(client, "kv-starvation")
    r = client.get(f"/api/sessions/{sid}/export", params={"format": "perfetto"})
    assert r.status_code == 200, r.text
    events = r.json()["traceEvents"]
    assert {e["ph"] for e in events} >= {"M", "X"}


def test_a_window_is_diagnosed_on_its_own_records_and_a_bad_or_long_one_is_refused(
        client: TestClient) -> None:
    sid = _session(client, "kv-starvation")
    whole = client.get(f"/api/sessions/{sid}/diagnosis", params={"full": "true"}).json()
    last = whole["num_records"] - 1
    window = client.get(f"/api/sessions/{sid}/diagnosis",
                        params={"from_iter": 10, "to_iter": 40}).json()
    assert window["window"] == [10, 40] and window["num_records"] == 31
    assert window["complete"] is False and whole["window"] == [0, last]
    # the window's summary counts only the requests that finished inside it
    assert window["summary"]["completed"] < whole["summary"]["completed"]
    r = client.get(f"/api/sessions/{sid}/diagnosis",
                   params={"from_iter": 40, "to_iter": last + 5})
    assert r.status_code == 400 and r.json()["detail"]["field"] == "from_iter"
