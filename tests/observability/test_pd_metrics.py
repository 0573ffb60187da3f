"""A P/D fleet's /metrics (observability/pd.py): every engine of both pools carries its `pool`
and `replica` labels, and the NIXL connector metrics (vLLM 0.33, nixl/stats.py NixlPromMetrics)
count the run's transfers as the formula prices them, parsed back with prometheus-client."""

from __future__ import annotations

from collections import defaultdict

import pytest
from prometheus_client.parser import text_string_to_metric_families

from servescope.api.records.pd_meters import fold, pd_meters
from servescope.api.wire.serialize import request_info
from servescope.core.pd_config import pd_fleet_from
from servescope.core.request import RequestSpec
from servescope.observability.families import engine_samples
from servescope.observability.pd import pd_views, positions_at
from servescope.observability.text import render

CONFIG = {"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100",
          "prefill": {"replicas": 2}, "decode": {"replicas": 2, "router": "round-robin"}}
N, PROMPT, OUTPUT = 6, 400, 8
# Llama-3.1-8B, bf16 KV: 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes a token
BYTES = PROMPT * 32 * 8 * 128 * 2 * 2
# 400 tokens in 16-token blocks, two NIXL regions (K, V) a layer, 32 layers
DESCRIPTORS = PROMPT // 16 * 2 * 32
# InfiniBand's default link: 0.01 ms + bytes at 50 GB/s (core/kv_link.py LINK_KINDS)
XFER_S = 0.01e-3 + BYTES / 50e9


def scrape(fails: frozenset[str], at_s: float = float("inf")) -> dict[str, dict]:
    """/metrics of the run at `at_s`: {sample name: {(pool, replica): value}} (histograms:
    their _count and _sum, and _bucket at le 0.005)."""
    specs = [RequestSpec(f"q{i}", PROMPT, OUTPUT, arrival_s=0.05 * i) for i in range(N)]
    fleet = pd_fleet_from(CONFIG, specs, records=True)
    fleet.fails = fails
    meters = pd_meters(fleet, request_info(specs))
    fold(meters, fleet.run())
    views = pd_views(meters, "m", 0, "pd1", 4096)
    samples = [s for view, pos in zip(views, positions_at(views, at_s), strict=True)
               for s in engine_samples(view, pos)]
    out: dict[str, dict] = defaultdict(dict)
    for family in text_string_to_metric_families(render(samples)):
        for sample in family.samples:
            labels = sample.labels
            if sample.name.endswith("_bucket") and labels["le"] != "0.005":
                continue
            out[sample.name][(labels.get("pool"), labels.get("replica"))] = sample.value
    return out


def test_every_engine_of_both_pools_has_its_pool_and_replica() -> None:
    series = scrape(frozenset())
    engines = {("prefill", "0"), ("prefill", "1"), ("decode", "0"), ("decode", "1")}
    assert set(series["vllm:num_requests_running"]) == engines
    assert set(series["vllm:nixl_xfer_time_seconds_count"]) == engines
    # a prefill replica generates each request's one token; the decode side all of them
    generated = series["vllm:generation_tokens_total"]
    assert generated[("prefill", "0")] + generated[("prefill", "1")] == N
    assert generated[("decode", "0")] + generated[("decode", "1")] == N * OUTPUT


def test_the_connector_metrics_count_the_transfers_as_priced() -> None:
    series = scrape(frozenset({"q3"}))  # one load fails: counted, not observed
    decode = [("decode", "0"), ("decode", "1")]
    count = series["vllm:nixl_xfer_time_seconds_count"]
    assert [count[k] for k in decode] == [3, 2]  # round-robin: q0 q2 q4 | q1 (q3) q5
    assert sum(count[("prefill", r)] for r in "01") == 0  # the decode side reads (pull)
    assert sum(series["vllm:nixl_bytes_transferred_sum"][k] for k in decode) == 5 * BYTES
    assert sum(series["vllm:nixl_num_descriptors_sum"][k] for k in decode) == 5 * DESCRIPTORS
    xfer = series["vllm:nixl_xfer_time_seconds_sum"]
    assert sum(xfer[k] for k in decode) == pytest.approx(5 * XFER_S)
    assert series["vllm:nixl_xfer_time_seconds_bucket"][decode[0]] == 3  # all under 5 ms
    failed = series["vllm:nixl_num_failed_transfers_total"]
    assert [failed[k] for k in decode] == [0, 1]
    assert set(series["vllm:nixl_num_failed_notifications_total"].values()) == {0}


def test_a_transfer_counts_once_the_decode_side_has_learned_it_ended() -> None:
    before = scrape(frozenset(), at_s=0.0)
    assert sum(before["vllm:nixl_xfer_time_seconds_count"].values()) == 0
