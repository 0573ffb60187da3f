"""GET /metrics stays bounded however many replicas a session asks for (issue 35): a fleet is
refused past MAX_VIEW_REPLICAS naming `replicas`, before anything runs, and a fleet at the
bound exports each replica's series once, no more than that many single engines would."""

from __future__ import annotations

import json

from prometheus_client.parser import text_string_to_metric_families
from support.server import receive_until

from servescope.api.wire.fleet import MAX_VIEW_REPLICAS

WORKLOAD = {"synthetic": {"num_requests": 40, "seed": 3}}


def vllm_lines(client) -> int:
    return sum(line.startswith("vllm:") for line in client.get("/metrics").text.splitlines())


def session_samples(client, label: str) -> list:
    """The session's vLLM samples (servescope_session_info says what each engine is)."""
    text = client.get("/metrics").text
    return [s for f in text_string_to_metric_families(text) for s in f.samples
            if s.labels.get("session") == label and s.name.startswith("vllm:")]


def run_to_end(client, config: dict) -> str:
    """A session of `config` on WORKLOAD, at its end; its metrics label."""
    session = client.post("/api/sessions", json={"config": config, "workload": WORKLOAD})
    assert session.status_code == 201, session.text
    with client.websocket_connect(session.json()["ws_path"]) as ws:
        receive_until(ws, "status")
        ws.send_text(json.dumps({"type": "seek", "v": 1, "time_s": 1e6}))
        while not receive_until(ws, "status")[-1]["done"]:
            pass
    return session.json()["metrics_label"]


def test_too_many_replicas_are_refused_naming_the_field(client, monkeypatch):
    before = vllm_lines(client)

    def built(given):  # refused before any replica's config is made (a million took a minute)
        raise AssertionError("a replica's config was made for a fleet too large to view")
    monkeypatch.setattr("servescope.api.sessions.build.replica_configs", built)
    for replicas in (MAX_VIEW_REPLICAS + 1, 10**6):
        r = client.post("/api/sessions", json={"config": {"replicas": replicas,
                                                          "router": "least-requests"},
                                               "workload": WORKLOAD})
        assert 400 <= r.status_code < 500 and r.status_code != 404, r.text
        assert "replicas" in r.text
    assert vllm_lines(client) == before


def test_a_fleet_at_the_bound_exports_each_replicas_series_once(client):
    single = session_samples(client, run_to_end(client, {}))
    fleet = session_samples(client, run_to_end(client, {"replicas": MAX_VIEW_REPLICAS,
                                                        "router": "least-requests"}))
    replicas = {s.labels.get("replica") for s in fleet}
    assert replicas == {str(k) for k in range(MAX_VIEW_REPLICAS)}
    assert len(fleet) <= MAX_VIEW_REPLICAS * len(single)
    series = [(s.name, tuple(sorted(s.labels.items()))) for s in fleet]
    assert len(series) == len(set(series))  # no series twice
