"""A P/D fleet's summary: the vllm-bench keys over the requests as clients see them (each
decode-side request from its client arrival; a failed KV load counts as failed), `pools`
(each pool's replicas and router, as a fleet's summary has them), `kv_transfer` and
`ttft_parts` (each request's TTFT in its parts).

A disaggregated request's TTFT, in time order:
    prefill_queue_ms  arrival -> first scheduled on its prefill replica
    prefill_ms        -> its prefill ends (the first token there, which the proxy drops)
    transfer_ms       -> its KV is on the decode replica (decode admission, link queue, wire)
    first_decode_ms   -> its first token on the decode replica (waiting for a slot, the step)
A colocated one (below the decider's threshold) has prefill_queue_ms and prefill_ms only.
`kv_transfer`'s times are the transfer parts; its wait is the part before the bytes move.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from servescope.core.fleet_summary import merged, replica_summary


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else 0.0


def kv_transfer(fleet: Any) -> dict[str, Any]:
    """Every load's bytes, its time from prefill end to KV ready (ms), and its wait."""
    ends = prefill_ends(fleet)
    loads = [load for c in fleet.connectors for load in c.loads.values()]
    times = [(load.done_s - ends[load.request_id]) * 1000.0 for load in loads]
    waits = [(load.start_s - ends[load.request_id]) * 1000.0 for load in loads]
    return {"transfers": len(loads), "bytes": sum(load.num_bytes for load in loads),
            "mean_ms": float(np.mean(times)) if times else 0.0,
            "p99_ms": percentile(times, 99), "p99_wait_ms": percentile(waits, 99),
            "failed": sum(load.failed for load in loads)}


def prefill_ends(fleet: Any) -> dict[str, float]:
    return {r.id: r.finish_time or 0.0 for e in fleet.prefill.engines for r in e.done_requests}


def ttft_parts(fleet: Any) -> dict[str, dict[str, float]]:
    """Each finished request's TTFT parts in ms (see the module's docstring)."""
    prefilled = {r.id: r for e in fleet.prefill.engines for r in e.done_requests}
    loads = {i: load for c in fleet.connectors for i, load in c.loads.items()}
    parts: dict[str, dict[str, float]] = {}
    for engine in fleet.decode.engines:
        for done in engine.done_requests:
            times = done.token_times
            if not times:
                continue
            arrival, first = fleet.arrival_s[done.id], times[0]
            if done.id in loads:
                pre, load = prefilled[done.id], loads[done.id]
                marks = [arrival, pre.first_scheduled_time, pre.finish_time, load.done_s, first]
            else:  # colocated: queued and prefilled on its decode replica
                marks = [arrival, done.first_scheduled_time, first, first, first]
            gaps = [(b - a) * 1000.0 for a, b in zip(marks, marks[1:], strict=False)]
            parts[done.id] = dict(zip(("prefill_queue_ms", "prefill_ms", "transfer_ms",
                                       "first_decode_ms"), gaps, strict=True))
    return parts


def pool(fleet: Any) -> dict[str, Any]:
    return {"replicas": [replica_summary(i, e, fleet.kv_usage_peak[i])
                         for i, e in enumerate(fleet.engines)],
            "router": fleet.router.totals()}


def pd_summary(fleet: Any) -> dict[str, Any]:
    engines = fleet.decode.engines
    summary = merged(engines)
    errored = [e for c in fleet.connectors for e in c.errored]
    summary["failed"] += len(errored)
    summary["pools"] = {"prefill": pool(fleet.prefill), "decode": pool(fleet.decode)}
    summary["kv_transfer"] = kv_transfer(fleet)
    summary["colocated"] = len(fleet.colocated)
    summary["ttft_parts"] = ttft_parts(fleet)
    return summary
