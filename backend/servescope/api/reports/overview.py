"""The whole run at a glance, for the page's overview strip and percentile panel, in a job's
worker process (api/jobs/pool.py): the stored records binned by simulated time (SQL over the track's
file) and latency percentiles of the requests that finished in a window (the engine's finished
requests as columns, api/reports/latency_columns.py; no record is decoded). The `*_json` forms
answer the JSON text, made in the worker: every page that asks is sent the same bytes
(api/reports/strip.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from servescope.api.records.run_store import open_reader
from servescope.api.reports.done_requests import DoneRequests
from servescope.api.reports.latency_columns import LatencyColumns, weighted_percentiles
from servescope.api.wire.serialize import dumps

PERCENTILES = (50, 90, 95, 99)
LATENCIES = ("ttft_ms", "tpot_ms", "itl_ms", "e2el_ms")


def overview(path: Path, head: int, bins: int, engine: int, done: bool,
             finished: DoneRequests | None) -> dict[str, Any]:
    """Columns with one entry per time bin of records 0..head of the track's file at `path`; a
    bin in which no step ran is null in every column but `t_s` (the strip draws a gap there, not
    a line across the idle time). Its p99 columns come from the `finished` requests.

    A bin's rates are over the bin or over the steps it sums, whichever is longer: a step longer
    than a bin counts its tokens over its own time, not the bin's (else one 40 ms prefill in a
    5 ms bin reads as eight times its real rate), so no bin's rate exceeds its fastest step's."""
    with open_reader(path) as store:
        t0, t1, rows = store.overview_bins(head, bins)
    width = max(t1 - t0, 1e-9) / bins
    names = ("first_iter", "last_iter", "throughput_tok_per_s", "busy_share", "num_running",
             "num_waiting", "kv_usage_pct", "kv_usage_max_pct", "p99_ttft_ms", "p99_e2el_ms")
    cols: dict[str, list[Any]] = {"t_s": [t0 + k * width for k in range(bins)]}
    cols.update({name: [None] * bins for name in names})
    for b, first, last, tokens, busy, running, waiting, kv, kv_max, start, end in rows:
        over = max(width, end - start)  # the time these tokens were made in
        for name, value in zip(names[:8], (first, last, tokens / over, min(1.0, busy / over),
                                           running, waiting, kv * 100, kv_max * 100),
                               strict=True):
            cols[name][b] = value
    columns = LatencyColumns(finished) if finished is not None else None
    for name, key in (("p99_ttft_ms", "ttft_ms"), ("p99_e2el_ms", "e2el_ms")):
        for b, value in _p99_by_finish(columns, key, t0, width, bins).items():
            if cols["first_iter"][b] is not None:
                cols[name][b] = value
    return {"engine": engine, "num_records": head + 1, "done": done,
            "start_s": t0, "end_s": t1, "bin_s": width, "columns": cols}


def _p99_by_finish(columns: LatencyColumns | None, key: str, t0: float, width: float,
                   bins: int) -> dict[int, float]:
    if columns is None:
        return {}
    value = getattr(columns, key)
    keep = ~np.isnan(value) & ~np.isnan(columns.e2el_ms)
    finish = columns.finish_s[keep]
    binned = np.clip(((finish - t0) / width).astype(np.int64), 0, bins - 1)
    value = value[keep]
    return {int(b): float(np.percentile(value[binned == b], 99)) for b in np.unique(binned)}


def percentiles(finished: DoneRequests | None, engine: int, done: bool, start_s: float | None,
                end_s: float | None) -> dict[str, Any]:
    """p50/p90/p95/p99 of TTFT, TPOT, ITL and E2E over the `finished` requests that finished in
    [start_s, end_s] (all of them when both are None); null where there are none. `upto_s`:
    where the simulation stood when they were taken (their engine's clock), null for none."""
    out: dict[str, Any] = {"engine": engine, "num_requests": 0, "window": [start_s, end_s],
                           "done": done, "upto_s": None}
    if finished is None or not len(finished):
        out.update({key: dict.fromkeys(f"p{p}" for p in PERCENTILES) for key in LATENCIES})
        return out
    columns = LatencyColumns(finished)
    finish = columns.finish_s
    selected = np.ones(len(finish), bool)
    if start_s is not None:
        selected &= finish >= start_s
    if end_s is not None:
        selected &= finish <= end_s
    out["num_requests"] = int(selected.sum())
    ends = finished.step_end_s
    out["upto_s"] = float(ends[-1]) if len(ends) else None
    for key in ("ttft_ms", "tpot_ms", "e2el_ms"):
        column = getattr(columns, key)[selected]
        column = column[~np.isnan(column)]
        out[key] = {f"p{p}": (float(np.percentile(column, p)) if column.size else None)
                    for p in PERCENTILES}
    values, counts = columns.itl(selected)
    out["itl_ms"] = dict(zip((f"p{p}" for p in PERCENTILES),
                             weighted_percentiles(values, counts, PERCENTILES), strict=True))
    return out


def overview_json(*args: Any) -> bytes:
    """overview(*args) as JSON."""
    return dumps(overview(*args)).encode()


def percentiles_json(*args: Any) -> bytes:
    """percentiles(*args) as JSON."""
    return dumps(percentiles(*args)).encode()
