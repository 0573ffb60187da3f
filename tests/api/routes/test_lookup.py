"""Ids that name nothing: every route that takes a session, scenario or trace id answers 404
with the API's error detail, and a session still being built counts as none."""

from __future__ import annotations

from fastapi.testclient import TestClient

NO_SESSION = {"message": "no such session", "field": "session_id", "code": "not_found"}


def test_every_session_route_answers_an_unknown_id_alike(client: TestClient) -> None:
    for method, path, body in (("GET", "", None), ("GET", "/summary", None),
                               ("GET", "/export", None), ("GET", "/diagnosis", None),
                               ("POST", "/scenario", {"name": "x"})):
        r = client.request(method, f"/api/sessions/nope{path}", json=body)
        assert (r.status_code, r.json()["detail"]) == (404, NO_SESSION), path


def test_a_session_not_yet_configured_is_not_found(client: TestClient) -> None:
    with client.websocket_connect("/ws/sessions/new"):  # a session; no configure sent yet
        (unbuilt,) = [s.id for s in client.app.state.registry.sessions.values()
                      if s.built is None]
        r = client.get(f"/api/sessions/{unbuilt}/summary")
        assert (r.status_code, r.json()["detail"]) == (404, NO_SESSION)


def test_unknown_scenario_and_trace(client: TestClient) -> None:
    r = client.get("/api/scenarios/nope")
    assert (r.status_code, r.json()["detail"]) == (404, {
        "message": "no such scenario", "field": "scenario_id", "code": "not_found"})
    r = client.get("/api/traces/nope")
    assert (r.status_code, r.json()["detail"]) == (404, {
        "message": "no such trace", "field": "trace_id"})
