"""The request timeline's spans built twice agree: the page's own (state/history.js, from the
records it receives) and the server's rows for a window (api/timeline.py, for a page with too
many requests to keep them all), on the same records of small workloads that preempt, chunk
prefills, hit the prefix cache and stall, and of a P/D decode replica whose requests wait for
their remote KV (through the time it idles, till the step their KV arrives in), span for span:
kind, start and end."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from servescope.api.reports.timeline import spans_of
from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.pd_config import pd_fleet_from
from servescope.core.pd_events import PoolStep
from servescope.core.request import RequestSpec

SPANS = Path(__file__).with_name("history_spans.mjs")

PREEMPTING = [RequestSpec(f"r{i}", 20 + 3 * i, 30, arrival_step=i) for i in range(6)]
# name: (config, requests, what the records must show)
WORKLOADS: dict[str, tuple[dict[str, Any], list[RequestSpec], str]] = {
    # 23 usable blocks of 4 tokens for six requests of some 55 tokens each
    "preemption": ({"num_gpu_blocks": 24, "block_size": 4, "max_num_batched_tokens": 64},
                   PREEMPTING, "preempted"),
    # prompts of 60-90 tokens under a budget of 24 and chunks of at most 16
    "chunked_prefill": ({"num_gpu_blocks": 128, "block_size": 4, "max_num_batched_tokens": 24,
                         "long_prefill_token_threshold": 16},
                        [RequestSpec(f"r{i}", 60 + 10 * i, 5, arrival_step=2 * i)
                         for i in range(4)], "chunks"),
    # a 24-token system prompt shared by requests that arrive after it is cached
    "prefix_caching": ({"num_gpu_blocks": 64, "block_size": 4, "max_num_batched_tokens": 32},
                       [RequestSpec(f"r{i}", 40, 4, arrival_step=3 * i, prefix=(("sys", 24),))
                        for i in range(5)], "cached"),
    # vLLM V0's scheduler leaves running requests out of a step that prefills: stalled spans
    "stalled": ({"num_gpu_blocks": 24, "block_size": 4, "max_num_batched_tokens": 64,
                 "policy": "vllm-v0"}, PREEMPTING, "stalled"),
    # arrivals seconds apart: idle time between the steps
    "idle_gaps": ({"num_gpu_blocks": 64, "block_size": 4},
                  [RequestSpec(f"r{i}", 12, 3, arrival_s=0.5 * i) for i in range(4)], "gaps"),
}


# A P/D fleet over a slow link (a 64-token prompt of Llama 3.1 8B is 8,388,608 KV bytes, 0.84 s at
# 0.01 GB/s), one link for both decode replicas' requests: while one request decodes, those
# admitted after it wait for their KV (core/kv_connector.py, rules D1-D3)
PD = {"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100", "num_gpu_blocks": 256,
      "prefill": {"replicas": 1}, "decode": {"replicas": 1},
      "kv_link": {"kind": "pcie", "gbps": 0.01}}


def pd_decode_records() -> list[dict[str, Any]]:
    """Decode replica 0's records of a P/D run (what the explorer streams when it is viewed)."""
    specs = [RequestSpec(f"r{k}", 64, 4, arrival_s=0.05 * k) for k in range(4)]
    return [e.record.to_dict() for e in pd_fleet_from(PD, specs, records=True).run()
            if isinstance(e, PoolStep) and e.pool == "decode" and e.replica == 0]


def shows(records: list[dict[str, Any]], what: str) -> bool:
    """Whether the records exercise what the workload is for."""
    if what == "preempted":
        return sum(len(r["preempted"]) for r in records) > 0
    if what == "chunks":
        return any(sum(e["kind"] == "prefill" for e in r["scheduled"]) > 1 for r in records)
    if what == "cached":
        return any(sum(r["num_cached_tokens"].values()) > 0 for r in records)
    if what == "stalled":
        return any(len(r["running"]) > len(r["scheduled"]) for r in records)
    ends = [r["time_s"] + r["step_time_ms"] / 1000 for r in records]
    return any(b["time_s"] > e + 0.1 for b, e in zip(records[1:], ends, strict=False))


def page_spans(records: list[dict[str, Any]]) -> dict[str, list[list[Any]]]:
    """The spans state/history.js builds, folded in node: id -> [[kind, t0_s, t1_s], ...] in
    the order of the timeline's rows."""
    stream = "\n".join(json.dumps(r) for r in records)
    out = subprocess.run(["node", str(SPANS)], input=stream, capture_output=True, text=True,
                         check=True, timeout=60)
    return json.loads(out.stdout)


def end_s(record: dict[str, Any]) -> float:
    return record["time_s"] + record["step_time_ms"] / 1000.0


def server_spans(records: list[dict[str, Any]], window: tuple[float, float] | None = None,
                 ) -> dict[str, list[list[Any]]]:
    """The spans api/reports/timeline.py builds for a window (the whole run when None), from
    the records as they are (the store's round trip is tests/api/reports/test_timeline_route.py's),
    so that both builders read the very same records."""
    t0, t1 = window or (records[0]["time_s"], end_s(records[-1]))
    got = spans_of(records, t0, t1, max_rows=len(records) + 1000)
    assert got is not None
    return {rid: [list(s[:3]) for s in ss] for rid, ss in got.items()}


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_page_and_server_build_the_same_spans(name: str) -> None:
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    config, specs, what = WORKLOADS[name]
    records = [r.to_dict() for r in Engine(EngineConfig.from_dict(config), specs).run()]
    assert shows(records, what), f"{name}: the workload no longer shows {what}"
    page = page_spans(records)
    server = server_spans(records)
    assert list(page) == list(server), "the rows' order"
    kinds = {k for spans in page.values() for k, _, _ in spans}
    assert kinds >= {"prefill", "decode"} | ({what} & {"preempted", "stalled"}), kinds
    for rid in page:
        # exact: both take a span's end as time_s + step_time_ms / 1000 of the same floats
        assert page[rid] == server[rid], f"{name}: {rid}'s spans differ"


def clipped(spans: dict[str, list[list[Any]]], t0: float, t1: float) -> dict[str, list[list[Any]]]:
    """The page's spans seen through a window: cut at its edges, those outside it dropped."""
    out = {}
    for rid, own in spans.items():
        inside = [[k, max(a, t0), min(b, t1)] for k, a, b in own if min(b, t1) > max(a, t0)]
        if inside:
            out[rid] = inside
    return out


@pytest.mark.parametrize("name", ["preemption", "stalled"])
def test_a_window_of_the_server_is_the_page_s_spans_cut_at_its_edges(
        name: str) -> None:
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    config, specs, _ = WORKLOADS[name]
    records = [r.to_dict() for r in Engine(EngineConfig.from_dict(config), specs).run()]
    a, b = records[len(records) // 3], records[2 * len(records) // 3]
    window = ((a["time_s"] + end_s(a)) / 2, (b["time_s"] + end_s(b)) / 2)  # mid-step edges
    page = clipped(page_spans(records), *window)
    server = server_spans(records, window)
    assert server and sorted(page) == sorted(server)  # rows: in the order seen in the window
    for rid in page:
        assert page[rid] == server[rid], f"{name}: {rid}'s spans differ"


def test_page_and_server_agree_on_a_decode_replica_s_waits_for_remote_kv() -> None:
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    records = pd_decode_records()
    assert any(r.get("waiting_for_kv") and r["running"] for r in records), "waits while one decodes"
    page = page_spans(records)
    server = server_spans(records)
    assert list(page) == list(server), "the rows' order"
    for rid in page:
        assert page[rid] == server[rid], f"{rid}'s spans differ"
    # r1 waits for its KV while r0 decodes: the state is there, on both sides alike
    assert page["r1"][0][0] == "waiting_for_kv" and page["r1"][0][2] <= page["r1"][1][1]
    assert "waiting" not in {k for spans in page.values() for k, _, _ in spans}


def kv_waits(records: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Each request's wait for its remote KV as the records tell it: from the first record that
    lists it waiting (the step admitting it: docs/pd.md, rules D1 and D1') to the start of the
    one whose kv_arrived names it (rule D3)."""
    waits: dict[str, list[Any]] = {}
    for r in records:
        for rid in r.get("waiting_for_kv", ()):
            waits.setdefault(rid, ["waiting_for_kv", r["time_s"], None])
        for rid in r.get("kv_arrived", ()):
            waits[rid][2] = r["time_s"]
    return waits


def test_a_wait_for_remote_kv_spans_the_time_the_decode_replica_idles() -> None:
    """r0 is admitted at 0.007 s and its KV arrives at 0.846 s, with only steps of no time
    between: one span, on both sides, over the whole run and through a window inside a gap."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    records = pd_decode_records()
    waits = kv_waits(records)
    assert waits["r0"][2] - waits["r0"][1] > 0.5 and all(w[2] for w in waits.values()), waits
    page, server = page_spans(records), server_spans(records)
    assert page == server
    for rid, wait in waits.items():
        assert page[rid][0] == wait, f"{rid}: its wait for KV"
    k = next(k for k, r in enumerate(records) if r["finished"] and r.get("waiting_for_kv"))
    window = (end_s(records[k]) + 0.1, records[k + 1]["time_s"] - 0.1)  # r0 done, 3 wait
    cut = server_spans(records, window)
    assert cut == clipped(page, *window)
    assert cut == {rid: [["waiting_for_kv", *window]] for rid in records[k]["waiting_for_kv"]}
