"""GET /metrics for a P/D session (api/reports/metrics.py over the P/D track's PDMeters): every
engine of both pools has its `pool` and `replica` labels, the NIXL connector's byte counts at
the session's time are the transfers done by then (vLLM 0.33's NixlKVConnectorStats counts a
read in the decode step that learns it ended: an idle decode replica wakes at that moment),
and a decode replica counts the loaded prompt tokens as vLLM's PromptTokenStats does."""

from __future__ import annotations

import json

from prometheus_client.parser import text_string_to_metric_families
from support.server import receive, receive_until

# A slow link (0.01 GB/s) so each 64-token handoff (8,388,608 bytes of Llama 3.1 8B's bf16 KV)
# takes 0.84 s, far longer than a decode step: the transfers end far apart.
PD = {"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100", "num_gpu_blocks": 256,
      "prefill": {"replicas": 1}, "decode": {"replicas": 2},
      "kv_link": {"kind": "pcie", "gbps": 0.01}}
PROMPT = 64
REQUESTS = [{"id": f"r{k}", "arrival_s": 0.05 * k, "prompt_len": PROMPT, "output_len": 4}
            for k in range(4)]
# a decode step of one request takes milliseconds: 10 ms after a load ends it is counted
LEARNED_S = 0.01


def scrape(client, label: str) -> dict[str, dict[tuple[str, str, str], float]]:
    """{sample name: {(pool, replica, source): value}} of the session's series."""
    out: dict[str, dict[tuple[str, str, str], float]] = {}
    for family in text_string_to_metric_families(client.get("/metrics").text):
        for s in family.samples:
            if s.labels.get("session") == label and "pool" in s.labels:
                key = (s.labels["pool"], s.labels["replica"], s.labels.get("source", ""))
                out.setdefault(s.name, {})[key] = s.value
    return out


def seek(ws, time_s: float) -> list[dict]:
    ws.send_text(json.dumps({"type": "seek", "v": 1, "time_s": time_s}))
    seen = []
    while (msg := receive(ws))["type"] != "status":
        seen.append(msg)
    return seen


def test_pd_metrics_follow_the_sessions_time(client):
    session = client.post("/api/sessions", json={"config": PD,
                                                 "workload": {"requests": REQUESTS}}).json()
    label = session["metrics_label"]
    with client.websocket_connect(session["ws_path"]) as ws:
        receive_until(ws, "status")  # what a viewer gets on joining
        end = [m for m in seek(ws, 1000.0) if m["type"] == "fleet"][-1]
        transfers = sorted(end["transfers"], key=lambda t: t["done_s"])
        assert len(transfers) == len(REQUESTS) and not any(t["failed"] for t in transfers)
        series = scrape(client, label)
        assert set(series["vllm:num_requests_running"]) == {
            ("prefill", "0", ""), ("decode", "0", ""), ("decode", "1", "")}
        for t in [transfers[0]["done_s"] - LEARNED_S,
                  *(x["done_s"] + LEARNED_S for x in transfers)]:
            seek(ws, t)
            series = scrape(client, label)
            done = [x for x in transfers if x["done_s"] <= t]
            for k in ("0", "1"):
                mine = [x for x in done if str(x["decode_replica"]) == k]
                key = ("decode", k, "")
                assert series["vllm:nixl_bytes_transferred_count"][key] == len(mine), t
                assert series["vllm:nixl_bytes_transferred_sum"][key] == sum(
                    x["num_bytes"] for x in mine), t
            assert series["vllm:nixl_bytes_transferred_count"][("prefill", "0", "")] == 0
        # at the end: each decode replica loaded every prompt token of its requests, computed
        # one (the last, recomputed to sample the first token) and had num_cached_tokens = 63
        seek(ws, 1000.0)
        by_source = scrape(client, label)["vllm:prompt_tokens_by_source_total"]
        cached = scrape(client, label)["vllm:prompt_tokens_cached_total"]
        n = len(REQUESTS)
        assert sum(by_source[("decode", k, "external_kv_transfer")] for k in "01") == n * PROMPT
        assert sum(by_source[("decode", k, "local_compute")] for k in "01") == n
        assert sum(by_source[("decode", k, "local_cache_hit")] for k in "01") == 0
        assert sum(cached[("decode", k, "")] for k in "01") == n * (PROMPT - 1)
        assert by_source[("prefill", "0", "external_kv_transfer")] == 0
        assert by_source[("prefill", "0", "local_compute")] == n * PROMPT
