"""A client that goes away aborts its request, as vLLM's does: the engine drops it and frees its
KV blocks (seen on /metrics: nothing running, the cache empty, one abort counted)."""

from __future__ import annotations

import http.client
import json

from support.endpoint import metric, wait_until
from support.server import Server


def test_a_disconnecting_stream_is_aborted_and_its_blocks_freed(endpoint: Server) -> None:
    before = metric(endpoint, "vllm:request_success_total", finished_reason="abort")
    conn = http.client.HTTPConnection("127.0.0.1", endpoint.port, timeout=30)
    # 2000 prompt tokens hold 125 blocks; 2000 decode steps of ~10 ms would take 5 s at 4x
    conn.request("POST", "/v1/completions", json.dumps(
        {"prompt": list(range(2000)), "max_tokens": 2000, "ignore_eos": True, "stream": True}),
        {"Content-Type": "application/json"})
    response = conn.getresponse()
    assert response.status == 200
    assert response.readline().startswith(b"data: ")  # the first token came
    assert metric(endpoint, "vllm:kv_cache_usage_perc") > 0
    conn.close()
    wait_until(lambda: metric(endpoint, "vllm:request_success_total",
                              finished_reason="abort") == before + 1, "aborted")
    assert metric(endpoint, "vllm:num_requests_running") == 0
    assert metric(endpoint, "vllm:kv_cache_usage_perc") == 0


def test_a_client_leaving_before_a_whole_answer_aborts_it(endpoint: Server) -> None:
    before = metric(endpoint, "vllm:request_success_total", finished_reason="abort")
    conn = http.client.HTTPConnection("127.0.0.1", endpoint.port, timeout=30)
    conn.request("POST", "/v1/completions", json.dumps(
        {"prompt": list(range(100)), "max_tokens": 2000, "ignore_eos": True}),
        {"Content-Type": "application/json"})
    wait_until(lambda: metric(endpoint, "vllm:num_requests_running") == 1, "running")
    conn.close()
    wait_until(lambda: metric(endpoint, "vllm:request_success_total",
                              finished_reason="abort") == before + 1, "aborted")
    assert metric(endpoint, "vllm:kv_cache_usage_perc") == 0
