"""GET /metrics: parses with prometheus-client's parser, carries vLLM's names, types, labels
and buckets, follows the playback position, equals the run's summary at the end, skips (and
counts) a session in a bad state, never shows a session id; the OpenMetrics export."""

from __future__ import annotations

import json
import math

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_parse
from prometheus_client.parser import text_string_to_metric_families
from support.server import receive

# Copied from vLLM's vllm/v1/metrics/loggers.py (PrometheusStatLogger).
TTFT = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5,
        10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0]
ITL = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
       20.0, 40.0, 80.0]
LATENCY = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0,
           120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0]
ITERATION = [1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]
TYPES = {
    "vllm:num_requests_running": ("gauge", None), "vllm:num_requests_waiting": ("gauge", None),
    "vllm:kv_cache_usage_perc": ("gauge", None), "vllm:cache_config_info": ("gauge", None),
    "vllm:num_preemptions": ("counter", None), "vllm:prompt_tokens": ("counter", None),
    "vllm:generation_tokens": ("counter", None), "vllm:request_success": ("counter", None),
    "vllm:prefix_cache_queries": ("counter", None), "vllm:prefix_cache_hits": ("counter", None),
    "vllm:time_to_first_token_seconds": ("histogram", TTFT),
    "vllm:inter_token_latency_seconds": ("histogram", ITL),
    "vllm:e2e_request_latency_seconds": ("histogram", LATENCY),
    "vllm:request_queue_time_seconds": ("histogram", LATENCY),
    "vllm:request_prefill_time_seconds": ("histogram", LATENCY),
    "vllm:request_decode_time_seconds": ("histogram", LATENCY),
    "vllm:request_prompt_tokens": ("histogram", "1-2-5"),
    "vllm:request_generation_tokens": ("histogram", "1-2-5"),
    "vllm:iteration_tokens_total": ("histogram", ITERATION),
    "vllm:request_max_num_generation_tokens": ("histogram", "1-2-5"),
    "vllm:request_params_n": ("histogram", [1, 2, 5, 10, 20]),
}


def scrape(client) -> dict:
    r = client.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    return {f.name: f for f in text_string_to_metric_families(r.text)}


def value(families, name, session, sample=None, **labels) -> float:
    fam = families[name]
    hits = [s.value for s in fam.samples if s.labels.get("session") == session
            and s.name == (sample or fam.name) and labels.items() <= s.labels.items()]
    assert len(hits) == 1, (name, sample, labels, hits)
    return hits[0]


def demo(client) -> dict:
    """The demo preset's session, made once per client (its POST answer carries the driver
    token: ws_path drives it)."""
    if not hasattr(client, "demo_session"):
        client.demo_session = client.post("/api/sessions",
                                          json={"workload": {"preset": "demo"}}).json()
    return client.demo_session


def seek_to_end(client, sid) -> None:
    with client.websocket_connect(demo(client)["ws_path"]) as ws:
        ws.send_text(json.dumps({"type": "seek", "v": 1, "iter": 10**7}))
        for _ in range(500):
            msg = receive(ws)
            if msg["type"] == "status" and msg["done"]:
                return
    raise AssertionError("the run did not reach its end")


def one_to_five(limit: int) -> list[float]:
    return [float(m * 10**e) for e in range(12) for m in (1, 2, 5) if m * 10**e <= limit]


def test_every_vllm_name_with_its_type_labels_and_buckets(client):
    session = demo(client)
    families = scrape(client)
    label = session["metrics_label"]
    for name, (kind, buckets) in TYPES.items():
        assert families[name].type == kind, name
        for s in families[name].samples:
            want = {"engine", "session"} | ({"model_name"} if "info" not in name else set())
            assert want <= set(s.labels), (name, s.labels)
        if kind != "histogram":
            continue
        config = session["engines"][0]["config"]
        requests = client.app.state.registry.get(session["session_id"]).tracks[0].requests
        longest = config["max_model_len"] or max(r["prompt_len"] + r["output_len"]
                                                 for r in requests)
        les = [float(s.labels["le"]) for s in families[name].samples
               if s.name.endswith("_bucket") and s.labels["session"] == label]
        assert les == (one_to_five(longest) if buckets == "1-2-5" else buckets) + [math.inf]
    reasons = {s.labels["finished_reason"] for s in families["vllm:request_success"].samples}
    assert reasons == {"stop", "length", "abort", "error", "repetition"}
    info = families["vllm:cache_config_info"].samples[0].labels
    assert info["block_size"] == str(session["engines"][0]["block_size"])


def test_before_playback_everything_is_zero_and_at_the_end_counters_equal_the_summary(client):
    session = demo(client)
    sid, label = session["session_id"], session["metrics_label"]
    before = scrape(client)
    assert value(before, "vllm:generation_tokens", label, "vllm:generation_tokens_total") == 0
    assert value(before, "vllm:num_requests_running", label) == 0
    seek_to_end(client, sid)
    after = scrape(client)
    (run,) = client.get(f"/api/sessions/{sid}/summary").json()
    summary = run["summary"]
    bench = client.get(f"/api/sessions/{sid}/export?format=bench").json()
    assert summary["num_preemptions"] > 0  # the demo preempts: that counter is exercised
    for name, key in (("vllm:generation_tokens", "total_output_tokens"),
                      ("vllm:prompt_tokens", "total_input_tokens"),
                      ("vllm:num_preemptions", "num_preemptions")):
        assert value(after, name, label, name + "_total") == summary[key], name
    assert value(after, "vllm:request_success", label, "vllm:request_success_total",
                 finished_reason="length") == summary["completed"]
    ttft_count = value(after, "vllm:time_to_first_token_seconds", label,
                       "vllm:time_to_first_token_seconds_count")
    assert ttft_count == len([t for t in bench["ttfts"] if t is not None]) == summary["completed"]
    ttft_sum = value(after, "vllm:time_to_first_token_seconds", label,
                     "vllm:time_to_first_token_seconds_sum")
    assert abs(ttft_sum - summary["mean_ttft_ms"] / 1000 * summary["completed"]) < 1e-6


def test_gauges_follow_the_playback_position(client):
    session = demo(client)
    sid, label = session["session_id"], session["metrics_label"]
    records = [json.loads(line) for line in
               client.get(f"/api/sessions/{sid}/export?format=jsonl").text.splitlines()]
    for it in (3, 40, len(records) // 2):
        with client.websocket_connect(session["ws_path"]) as ws:
            ws.send_text(json.dumps({"type": "seek", "v": 1, "iter": it}))
            while (msg := receive(ws))["type"] != "status" or msg["iters"] != [it]:
                pass
        families = scrape(client)
        running = set(records[it]["running"]) - set(records[it]["finished"])  # after update
        assert value(families, "vllm:num_requests_running", label) == len(running)
        assert value(families, "vllm:num_requests_waiting", label) == len(records[it]["waiting"])
        assert abs(value(families, "vllm:kv_cache_usage_perc", label)
                   - records[it]["kv_usage"]) < 1e-6


def test_a_session_in_a_bad_state_is_skipped_and_counted(client):
    demo(client)
    other = client.post("/api/sessions", json={}).json()
    registry = client.app.state.registry
    assert other["metrics_label"] in client.get("/metrics").text
    registry.get(other["session_id"]).position = [10**9]  # past anything computed
    r = client.get("/metrics")
    assert r.status_code == 200
    families = {f.name: f for f in text_string_to_metric_families(r.text)}
    assert other["metrics_label"] not in r.text
    assert demo(client)["metrics_label"] in r.text
    errors = families["servescope_metrics_errors"].samples
    assert [s.value for s in errors if s.name == "servescope_metrics_errors_total"] == [1]
    registry.get(other["session_id"]).position = [-1]
    assert other["metrics_label"] in client.get("/metrics").text


def test_session_ids_never_appear_on_metrics(client):
    demo(client)
    client.post("/api/sessions", json={})
    text = client.get("/metrics").text
    ids = list(client.app.state.registry.sessions)
    assert len(ids) == 2
    for sid in ids:
        label = client.get(f"/api/sessions/{sid}").json()["metrics_label"]
        assert sid not in text and f'session="{label}"' in text


def test_http_metrics_count_api_requests_but_not_scrapes(client):
    client.get("/api/presets")
    client.get("/api/sessions/nope/summary")
    families = scrape(client)
    scrape(client)
    samples = {(s.labels["handler"], s.labels["status"]): s.value
               for s in families["http_requests"].samples if s.name == "http_requests_total"}
    assert samples[("/api/presets", "2xx")] == 1
    assert samples[("/api/sessions/{session_id}/summary", "4xx")] == 1
    assert not any(handler == "/metrics" for handler, _ in samples)


def test_openmetrics_export_is_stamped_with_simulated_time(client):
    session = demo(client)
    sid, label = session["session_id"], session["metrics_label"]
    r = client.get(f"/api/sessions/{sid}/export?format=openmetrics&epoch=1700000000"
                   "&interval_s=0.5")
    assert r.status_code == 200 and r.headers["content-type"].startswith(
        "application/openmetrics-text")
    assert r.text.endswith("# EOF\n")
    # prometheus-client's OpenMetrics parser rejects histograms with several timestamps
    # (promtool takes them: test_prometheus.py); the counters' family is parsed here.
    block = next(b for b in r.text.split("# HELP ") if b.startswith("vllm:generation_tokens "))
    (family,) = om_parse("# HELP " + block + "# EOF\n")
    gen = [s for s in family.samples if s.name.endswith("_total")]
    stamps = [float(s.timestamp) for s in gen]
    assert stamps == sorted(stamps) and stamps[0] == 1700000000 and stamps[1] == 1700000000.5
    assert all(s.labels["session"] == label for s in gen)
    (run,) = client.get(f"/api/sessions/{sid}/summary").json()
    assert gen[-1].value == run["summary"]["total_output_tokens"]
    values = [s.value for s in gen]
    assert values == sorted(values) and values[0] < values[-1]


def test_openmetrics_export_refuses_bad_sampling(client):
    sid = demo(client)["session_id"]
    base = f"/api/sessions/{sid}/export?format=openmetrics"
    r = client.get(base + "&interval_s=0")
    assert r.status_code == 422 and "interval_s" in json.dumps(r.json())
    r = client.get(base + "&interval_s=0.0000001")
    assert (r.status_code, r.json()["detail"]["field"]) == (400, "interval_s")
    assert client.get(base + "&epoch=-5").status_code == 422


def test_the_metrics_writer_equals_prometheus_clients_generate_latest(client):
    """/metrics writes the sessions' families itself (for speed): byte for byte what
    prometheus-client's generate_latest writes for the same collector, mid-run and at rest."""
    collector = client.app.state.sessions_metrics
    other = client.post("/api/sessions", json={"configs": [{}, {"max_num_seqs": 4}]}).json()
    with client.websocket_connect(other["ws_path"]) as ws:
        ws.send_text(json.dumps({"type": "seek", "v": 1, "iter": 60}))
        while (msg := receive(ws))["type"] != "status" or msg["iters"][0] != 60:
            pass
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    reference = generate_latest(registry).decode()
    assert collector.text() == reference
    assert 'engine="1"' in reference and 'le="2560.0"' in reference
    families = {f.name: f for f in text_string_to_metric_families(reference)}
    info = {(s.labels["session"], s.labels["engine"]): s.labels
            for s in families["servescope_session_info"].samples}
    assert info[(other["metrics_label"], "1")]["engine_label"] == "max_num_seqs=4"
    assert {i["source"] for i in info.values()} == {"simulated"}
