"""Per-request latencies and a run summary with the keys and units of `vllm bench serve`."""

from __future__ import annotations

from collections.abc import Sequence
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


def latency_stats(prefix: str, values: Sequence[float] | np.ndarray) -> dict[str, float]:
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


def token_times(done: list[Request]) -> tuple[np.ndarray, np.ndarray]:
    """Every sampled token's time, request after request, and each request's token count:
    the requests' token_times concatenated, gathered from the token runs in one pass."""
    runs = [r.all_token_runs for r in done]
    counts = np.array([sum(c for _, c in rr) for rr in runs], np.int64)
    flat = [run for rr in runs for run in rr]
    if not flat:
        return np.zeros(0), counts
    first, count = np.array(flat, np.int64).reshape(-1, 2).T
    position = np.cumsum(count) - count  # where each run's tokens start in the result
    index = np.arange(int(count.sum())) - np.repeat(position - first, count)
    ends = [r.step_end_s for r in done]
    if all(e is ends[0] for e in ends):  # one engine's requests: one clock
        return np.asarray(ends[0], np.float64)[index], counts
    owner = np.repeat(np.repeat(np.arange(len(done)), [len(rr) for rr in runs]), count)
    times = np.empty(len(index))
    for k in range(len(done)):  # requests of several engines: each its own clock
        mine = owner == k
        times[mine] = np.asarray(ends[k], np.float64)[index[mine]]
    return times, counts


def summarize(done: list[Request], duration_s: float, rejected: list[tuple[str, str]],
              waste_totals: dict[str, int], frontend_ms: float = 0.0) -> dict[str, Any]:
    """The run's summary over `done`, with request_metrics' arithmetic done on columns."""
    times, counts = token_times(done)
    has = counts > 0
    first = np.cumsum(counts) - counts
    arrival = np.array([r.arrival_time for r in done], np.float64)
    finish = np.array([np.nan if r.finish_time is None else r.finish_time for r in done])
    ttft = (times[first[has]] - arrival[has]) * 1000.0 + frontend_ms
    e2el_all = (finish - arrival) * 1000.0 + frontend_ms
    e2el = e2el_all[~np.isnan(finish)]
    many = counts > 1
    ttft_all = np.full(len(done), np.nan)
    ttft_all[has] = ttft
    tpot = ((e2el_all - ttft_all) / (counts - 1).clip(1))[many & ~np.isnan(finish)]
    itl = np.diff(times) * 1000.0
    boundary = first[has]
    itl = np.delete(itl, boundary[boundary > 0] - 1)  # no interval across two requests
    input_tokens = sum(r.prompt_len for r in done)
    output_tokens = int(counts.sum())
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
    summary.update(latency_stats("ttft", ttft))
    summary.update(latency_stats("tpot", tpot))
    summary.update(latency_stats("itl", itl))
    summary.update(latency_stats("e2el", e2el))
    summary["num_preemptions"] = sum(r.num_preemptions for r in done)
    summary.update(waste_shares(waste_totals))
    return summary
