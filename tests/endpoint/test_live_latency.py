"""api/openai/latency.py: a live engine's TTFT, ITL and end-to-end histograms, observed as
vLLM 0.33's IterationStats.update_from_output and update_from_finished_request
(vllm/v1/metrics/stats.py) observe them, on a hand-made request; and on a real server's /metrics
after a streamed completion."""

from __future__ import annotations

import json

import httpx
import pytest
from support.real_clients import scrape, total
from support.server import Server

from servescope.api.openai.latency import Latencies


def test_first_token_then_one_gap_a_step_then_end_to_end() -> None:
    latencies = Latencies()
    # arrived at 1.0 s; steps giving it tokens end at 1.05 (its first), 1.07, then 1.10 (its last)
    latencies.observe(1.0, None, 1.05, done=False)
    latencies.observe(1.0, 1.05, 1.07, done=False)
    latencies.observe(1.0, 1.07, 1.10, done=True)
    ttft, itl, e2e = (latencies.histograms[name] for name in
                      ("time_to_first_token", "inter_token_latency", "e2e_request_latency"))
    assert ttft.sum == pytest.approx(0.05) and ttft.counts[-1] == 0
    assert itl.sum == pytest.approx(0.05)  # 0.02 + 0.03: one gap a step, not one a token
    assert e2e.sum == pytest.approx(0.10)
    # vLLM's buckets (loggers.py): 0.05 s of TTFT lies in (0.04, 0.06]; ITL 0.02 in
    # (0.01, 0.025] and 0.03 in (0.025, 0.05]; 0.1 s end to end in the first, (0, 0.3]
    assert dict(ttft.cumulative())["0.04"] == 0 and dict(ttft.cumulative())["0.06"] == 1
    assert [dict(itl.cumulative())[b] for b in ("0.01", "0.025", "0.05", "+Inf")] == [0, 1, 2, 2]
    assert dict(e2e.cumulative())["0.3"] == 1


def test_a_value_on_a_bound_counts_in_that_bucket() -> None:
    latencies = Latencies()
    latencies.observe(0.0, None, 0.01, done=False)  # 0.01: TTFT's bound, Prometheus' le
    assert dict(latencies.histograms["time_to_first_token"].cumulative())["0.01"] == 1


def test_a_streamed_completion_shows_on_metrics(endpoint: Server) -> None:
    body = {"model": httpx.get(endpoint.url + "/v1/models").json()["data"][0]["id"],
            "prompt": "hello there", "max_tokens": 5, "ignore_eos": True, "stream": True}
    before = scrape(endpoint.url + "/metrics")
    with httpx.stream("POST", endpoint.url + "/v1/completions", json=body, timeout=60) as r:
        assert r.status_code == 200
        texts = [json.loads(line[6:])["choices"][0]["text"] for line in r.iter_lines()
                 if line.startswith("data: {")]
    # a frame a step, or several steps' tokens in one when the server ran late (as vLLM's
    # RequestOutputCollector merges outputs its consumer has not read yet): five words in all
    assert len(texts) >= 2 and len("".join(texts).split()) == 5
    after = scrape(endpoint.url + "/metrics")

    def more(name: str) -> float:
        return total(after, name) - total(before, name)
    assert more("vllm:time_to_first_token_seconds_count") == 1
    assert more("vllm:e2e_request_latency_seconds_count") == 1
    # five tokens, one a decode step: four gaps after the first
    assert more("vllm:inter_token_latency_seconds_count") == 4
    assert more("vllm:e2e_request_latency_seconds_sum") == pytest.approx(
        more("vllm:time_to_first_token_seconds_sum")
        + more("vllm:inter_token_latency_seconds_sum"))
