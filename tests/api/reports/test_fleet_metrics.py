"""GET /metrics for a session that runs a fleet: every replica's vLLM series, told apart by the
`replica` label (observability/fleet.py), at the session's simulated time: at the end each
replica's counters equal its own requests in the fleet's summary, and mid-run its gauges are
the fleet frame's row for it at that time."""

from __future__ import annotations

import json

from prometheus_client.parser import text_string_to_metric_families
from support.server import receive, receive_until

FLEET = {"replicas": 3, "router": "round-robin", "max_num_seqs": 4}
WORKLOAD = {"synthetic": {"num_requests": 12, "seed": 5}}


def per_replica(client, label: str, name: str, sample: str | None = None) -> dict[int, float]:
    text = client.get("/metrics").text
    family = next(f for f in text_string_to_metric_families(text) if f.name == name)
    out = {}
    for s in family.samples:
        if s.labels.get("session") == label and s.name == (sample or name) \
                and s.labels.get("finished_reason", "length") == "length":
            out[int(s.labels["replica"])] = s.value
    return out


def seek(ws, time_s: float) -> list[dict]:
    ws.send_text(json.dumps({"type": "seek", "v": 1, "time_s": time_s}))
    seen = []
    while (msg := receive(ws))["type"] != "status":
        seen.append(msg)
    return [*seen, msg]


def test_each_replica_has_its_own_series_and_they_follow_the_sessions_time(client):
    session = client.post("/api/sessions", json={"config": FLEET, "workload": WORKLOAD}).json()
    label = session["metrics_label"]
    with client.websocket_connect(session["ws_path"]) as ws:
        receive_until(ws, "status")  # what a viewer gets on joining
        seen = seek(ws, 1000.0)  # the end
        summary = next(m for m in seen if m["type"] == "done")["summary"]
        done = per_replica(client, label, "vllm:request_success",
                           "vllm:request_success_total")
        assert done == {r["replica"]: r["completed"] for r in summary["replicas"]}
        prompts = per_replica(client, label, "vllm:prompt_tokens", "vllm:prompt_tokens_total")
        assert sum(prompts.values()) == summary["total_input_tokens"]
        assert all(v > 0 for v in prompts.values())
        mid = [m for m in seek(ws, summary["duration"] / 2) if m["type"] == "fleet"][-1]
        running = per_replica(client, label, "vllm:num_requests_running")
        waiting = per_replica(client, label, "vllm:num_requests_waiting")
        for row in mid["replicas"]:
            assert running[row["replica"]] == row["num_running"]
            assert waiting[row["replica"]] == row["num_waiting"]
