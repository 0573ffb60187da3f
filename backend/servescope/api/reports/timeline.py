"""The request timeline of a window of the run, for a page that has too many requests to draw a
row each: how many requests were in each state over time (density by state, from the store's
count columns), and, when the window holds few enough requests, each one's spans (rows)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from servescope.api.records.run_store import StoreReader, open_reader
from servescope.api.reports.work import records as stored_records
from servescope.core.request_table import request_table

# The timeline's span kinds, in the order they stack; waiting_for_kv: a P/D decode replica's
# requests admitted with their remote KV in flight (vLLM's WAITING_FOR_REMOTE_KVS), not waiting
STATES = ("waiting", "waiting_for_kv", "prefill", "decode", "stalled", "preempted")
MAX_ROW_RECORDS = 20_000  # records decoded at most for rows; a longer window gets density only
# Up to this many records a window is binned exactly (each step split across the bins it
# spans, in numpy); beyond, by SQL sums per start bin (some 50 ms a 100k records, not 0.5 s).
MAX_EXACT_RECORDS = 50_000


@dataclass(frozen=True)
class StoredRun:
    """What a timeline job reads of a track (in a thread of the server, api/jobs/pool.py): its file,
    on a connection of the job's own, up to the head the event loop had published."""

    path: Path
    requests: list[dict[str, Any]]
    engine: int
    head: int
    done: bool


def timeline(run: StoredRun, start_s: float | None, end_s: float | None, bins: int,
             max_rows: int) -> dict[str, Any]:
    """Density by state over [start_s, end_s] (either bound left out: the run's) in `bins`
    bins, plus `rows` when at most `max_rows` requests appear in the window (else null)."""
    with open_reader(run.path) as store:
        return _timeline(store, run, start_s, end_s, bins, max_rows)


def _timeline(store: StoreReader, run: StoredRun, start_s: float | None, end_s: float | None,
              bins: int, max_rows: int) -> dict[str, Any]:
    span = store.span(run.head)
    out: dict[str, Any] = {"engine": run.engine, "num_records": run.head + 1,
                           "done": run.done, "states": list(STATES), "rows": None}
    if span is None:
        return {**out, "start_s": 0.0, "end_s": 0.0, "bin_s": 0.0,
                "columns": {"t_s": [], **{s: [] for s in STATES}}}
    t0 = span[0] if start_s is None else start_s
    t1 = max(t0 + 1e-9, span[1] if end_s is None else end_s)
    width = (t1 - t0) / bins
    first, last = store.iter_range(run.head, t0, t1)
    out.update(start_s=t0, end_s=t1, bin_s=width)
    if last - first >= MAX_EXACT_RECORDS:
        out["columns"] = coarse_density(store.state_bins(first, last, t0, width, bins),
                                        t0, width, bins)
        return out
    records = store.state_counts(first, last) if last >= first else []
    out["columns"] = density(records, t0, width, bins)
    if records and last - first < MAX_ROW_RECORDS:
        out["rows"] = rows(run, first, last, t0, t1, max_rows)
    return out


def coarse_density(binned: list[tuple[Any, ...]], t0: float, width: float,
                   bins: int) -> dict[str, list[float | None]]:
    """`density` for a long window from the store's sums per start bin (a step counts whole
    in the bin it starts in: bins there hold many steps each)."""
    cols: dict[str, list[float | None]] = {"t_s": [t0 + k * width for k in range(bins)]}
    cols.update({s: [None] * bins for s in STATES})
    for b, busy, *sums in binned:
        if busy > 0:
            for name, v in _by_state(*sums).items():
                cols[name][b] = v / width
    return cols


def state_columns(records: list[tuple[Any, ...]]) -> dict[str, np.ndarray]:
    """Each record's number of requests in each state (the counts the store keeps)."""
    a = np.asarray([r[3:9] for r in records], dtype=float).reshape(-1, 6)
    return _by_state(*a.T)


def _by_state(prefill: Any, decode: Any, running: Any, waiting: Any, preempted: Any,
              waiting_for_kv: Any) -> dict[str, Any]:
    """The states from the store's count columns (numbers or arrays alike): a waiting request
    is preempted, waiting for remote KV, or plainly waiting; a running one not scheduled is
    stalled."""
    return {"waiting": waiting - preempted - waiting_for_kv, "waiting_for_kv": waiting_for_kv,
            "prefill": prefill, "decode": decode, "stalled": running - prefill - decode,
            "preempted": preempted}


def density(records: list[tuple[Any, ...]], t0: float, width: float,
            bins: int) -> dict[str, list[float | None]]:
    """Per bin, the mean number of requests in each state over the bin's time (a record counts
    for the part of its step inside the bin); null in a bin in which no step ran."""
    edges = t0 + width * np.arange(bins + 1)
    start = np.asarray([r[1] for r in records], dtype=float)
    end = np.asarray([r[2] for r in records], dtype=float)
    busy = _binned(start, end, np.ones_like(start), edges)
    idle = busy <= 0
    cols: dict[str, list[float | None]] = {"t_s": edges[:-1].tolist()}
    for name, counts in state_columns(records).items():
        mean = _binned(start, end, counts, edges) / width
        cols[name] = [None if gap else float(v) for v, gap in zip(mean, idle, strict=True)]
    return cols


def _binned(start: np.ndarray, end: np.ndarray, value: np.ndarray,
            edges: np.ndarray) -> np.ndarray:
    """The integral of a step function (value[j] on [start[j], end[j]), 0 elsewhere; steps in
    time order, not overlapping) over each bin between consecutive edges."""
    if not start.size:
        return np.zeros(edges.size - 1)
    cum = np.concatenate(([0.0], np.cumsum(value * (end - start))))
    j = np.searchsorted(start, edges, side="right") - 1
    jc = np.clip(j, 0, start.size - 1)
    inside = np.clip(edges - start[jc], 0.0, end[jc] - start[jc]) * value[jc]
    area = np.where(j >= 0, cum[jc] + inside, 0.0)
    return np.diff(area)


def rows(run: StoredRun, first: int, last: int, t0: float, t1: float,
         max_rows: int) -> list[dict[str, Any]] | None:
    """Each request's spans in [t0, t1], in the order it first appears (the same kinds and
    merging as the page's own timeline, frontend/static/js/state/history.js); None when more
    than `max_rows` requests appear."""
    spans = spans_of(stored_records(run.path, run.requests, last, first), t0, t1, max_rows)
    if spans is None:
        return None
    index = request_table(run.requests).positions
    return [{"id": rid, "index": index.get(rid), "spans": [s[:3] for s in ss]}
            for rid, ss in spans.items()]


def spans_of(records: Iterable[dict[str, Any]], t0: float, t1: float,
             max_rows: int) -> dict[str, list[list[Any]]] | None:
    """Each request's spans in [t0, t1] over `records`, [kind, t0_s, t1_s, last iter] each,
    in the order it first appears; None when more than `max_rows` requests appear."""
    spans: dict[str, list[list[Any]]] = {}
    preempted: set[str] = set()
    for rec in records:
        preempted.update(rec["preempted"])
        preempted.difference_update(rec["resumed"], (e["id"] for e in rec["scheduled"]))
        a = max(t0, rec["time_s"])
        b = min(t1, rec["time_s"] + rec["step_time_ms"] / 1000.0)
        if b <= a:  # the step before the window ended before it
            continue
        kinds = {e["id"]: e.get("kind", "prefill") for e in rec["scheduled"]}
        for rid in rec["running"]:
            _push(spans, rid, kinds.get(rid, "stalled"), a, b, rec["iter"])
        kv = rec.get("waiting_for_kv", ())  # P/D: admitted, its remote KV in flight
        for rid in rec["waiting"]:
            kind = ("preempted" if rid in preempted else "waiting_for_kv" if rid in kv
                    else "waiting")
            _push(spans, rid, kind, a, b, rec["iter"])
        if len(spans) > max_rows:
            return None
    return spans


def _push(spans: dict[str, list[list[Any]]], rid: str, kind: str, a: float, b: float,
          it: int) -> None:
    """Extend the request's last span when it is the same kind from the record before (each
    prefill chunk stays a span of its own), else start one: [kind, t0_s, t1_s, last iter]."""
    own = spans.setdefault(rid, [])
    last = own[-1] if own else None
    if last and last[0] == kind and last[3] == it - 1 and kind != "prefill":
        last[2], last[3] = b, it
    else:
        own.append([kind, a, b, it])
