"""Per-request latencies and a run summary with the keys and units of `vllm bench serve`."""

from __future__ import annotations

from typing import Any

import numpy as np

from servescope.core.request import Request


def request_metrics(request: Request, frontend_ms: float = 0.0) -> dict[str, Any]:
    """`frontend_ms`, the API server's time outside the engine, is added to TTFT and E2E."""
    times = request.token_times
    first = times[0] if times else None
    finish = request.finish_time
    itl = np.diff(np.asarray(times)) * 1000.0 if len(times) > 1 else np.zeros(0)
    ttft = (first - request.arrival_time) * 1000.0 + frontend_ms if first is not None else None
    e2el = (finish - request.arrival_time) * 1000.0 + frontend_ms if finish is not None else None
    tpot = None
    if ttft is not None and e2el is not None and len(times) > 1:
        tpot = (e2el - ttft) / (len(times) - 1)
    queued = None
    if request.first_scheduled_time is not None:
        queued = (request.first_scheduled_time - request.arrival_time) * 1000.0
    return {
        "id": request.id, "prompt_len": request.prompt_len, "output_len": request.output_len,
        "arrival_s": request.arrival_time, "ttft_ms": ttft, "tpot_ms": tpot,
        "itl_ms": [float(x) for x in itl], "e2el_ms": e2el, "queue_ms": queued,
        "num_preemptions": request.num_preemptions,
        "num_cached_tokens": max(request.num_cached_tokens, 0),
    }


def latency_stats(prefix: str, values: list[float]) -> dict[str, float]:
    """mean/median/std/p90/p99 of `values` in ms, under `vllm bench serve`'s keys (numpy's
    percentile, as vLLM uses); zeros when there are none."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        arr = np.zeros(1)
    return {
        f"mean_{prefix}_ms": float(arr.mean()),
        f"median_{prefix}_ms": float(np.median(arr)),
        f"std_{prefix}_ms": float(arr.std()),
        f"p90_{prefix}_ms": float(np.percentile(arr, 90)),
        f"p99_{prefix}_ms": float(np.percentile(arr, 99)),
    }


def waste_shares(totals: dict[str, int]) -> dict[str, float]:
    """Each Fig. 2 category's share of the KV memory in use, averaged over the run's steps."""
    in_use = sum(totals.values())
    return {f"kv_{k}_share": (v / in_use if in_use else 0.0) for k, v in totals.items()}


def summarize(done: list[Request], duration_s: float, rejected: list[tuple[str, str]],
              waste_totals: dict[str, int], frontend_ms: float = 0.0) -> dict[str, Any]:
    rows = [request_metrics(r, frontend_ms) for r in done]
    input_tokens = sum(r.prompt_len for r in done)
    output_tokens = sum(len(r.token_times) for r in done)
    duration = max(duration_s, 1e-12)
    summary: dict[str, Any] = {
        "completed": len(done),
        "failed": len(rejected),
        "duration": duration_s,
        "total_input_tokens": input_tokens,
        "total_output_tokens": output_tokens,
        "request_throughput": len(done) / duration,
        "output_throughput": output_tokens / duration,
        "total_token_throughput": (input_tokens + output_tokens) / duration,
    }
    summary.update(latency_stats("ttft", [r["ttft_ms"] for r in rows if r["ttft_ms"] is not None]))
    summary.update(latency_stats("tpot", [r["tpot_ms"] for r in rows if r["tpot_ms"] is not None]))
    summary.update(latency_stats("itl", [x for r in rows for x in r["itl_ms"]]))
    summary.update(latency_stats("e2el", [r["e2el_ms"] for r in rows if r["e2el_ms"] is not None]))
    summary["num_preemptions"] = sum(r.num_preemptions for r in done)
    summary.update(waste_shares(waste_totals))
    return summary
