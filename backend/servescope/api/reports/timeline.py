"""The request timeline of a window of the run, for a page that has too many requests to draw a
row each: how many requests were in each state over time (density by state, from the store's
count columns), and, when the window holds few enough requests, each one's spans (rows).

A state lasts as long as its record's step, except on a P/D decode replica that idles while
requests wait for their remote KV (it runs no step till one arrives; admitting them is a step
of no time: docs/pd.md, rule D1'): a record that lists requests waiting for KV holds its
waiting requests, each in its state, until the next record starts. A colocated engine never
idles with requests waiting (an idle engine admits what waits), so nothing else is held."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
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
    requests: Sequence[dict[str, Any]]
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
    holds = store.kv_holds(first, last, run.head) if last >= first else []
    if last - first >= MAX_EXACT_RECORDS:
        out["columns"] = coarse_density(store.state_bins(first, last, t0, width, bins),
                                        holds, t0, width, bins)
        return out
    records = store.state_counts(first, last) if last >= first else []
    out["columns"] = density(records, holds, t0, width, bins)
    if records and last - first < MAX_ROW_RECORDS:
        after_s = store.start_s(last + 1) if last < run.head else None
        out["rows"] = rows(run, first, last, (t0, t1), max_rows, after_s)
    return out


def coarse_density(binned: list[tuple[Any, ...]], holds: list[tuple[Any, ...]], t0: float,
                   width: float, bins: int) -> dict[str, list[float | None]]:
    """`density` for a long window from the store's sums per start bin (a step counts whole
    in the bin it starts in: bins there hold many steps each); the holds, few and each long,
    split across the bins they cover, as `density` does."""
    busy = np.zeros(bins)
    sums = {s: np.zeros(bins) for s in STATES}
    for b, dt, *counts in binned:
        busy[b] += dt
        for name, v in _by_state(*counts).items():
            sums[name][b] += v
    _add_holds(busy, sums, holds, t0 + width * np.arange(bins + 1))
    return _means(busy, sums, t0 + width * np.arange(bins), width)


def _add_holds(busy: np.ndarray, sums: dict[str, np.ndarray], holds: list[tuple[Any, ...]],
               edges: np.ndarray) -> None:
    """Add the holds (the store's kv_holds: a decode replica's idle time with requests waiting
    for remote KV, none running) to each bin's busy seconds and per-state request-seconds."""
    if not holds:
        return
    a = np.asarray(holds, dtype=float)
    start, end, none = a[:, 0], a[:, 1], np.zeros(len(a))
    busy += _binned(start, end, np.ones_like(start), edges)
    for name, counts in _by_state(none, none, none, a[:, 2], a[:, 3], a[:, 4]).items():
        sums[name] += _binned(start, end, counts, edges)


def _means(busy: np.ndarray, sums: dict[str, np.ndarray], t_s: np.ndarray,
           width: float) -> dict[str, list[float | None]]:
    """The columns: each state's mean number of requests per bin, null where nothing ran."""
    cols: dict[str, list[float | None]] = {"t_s": t_s.tolist()}
    for name, total in sums.items():
        cols[name] = [None if b <= 0 else float(v) for v, b in zip(total / width, busy,
                                                                   strict=True)]
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


def density(records: list[tuple[Any, ...]], holds: list[tuple[Any, ...]], t0: float,
            width: float, bins: int) -> dict[str, list[float | None]]:
    """Per bin, the mean number of requests in each state over the bin's time (a record counts
    for the part of its step inside the bin, and its hold for the part of that); null in a bin
    in which no step ran and nothing was held."""
    edges = t0 + width * np.arange(bins + 1)
    start = np.asarray([r[1] for r in records], dtype=float)
    end = np.asarray([r[2] for r in records], dtype=float)
    busy = _binned(start, end, np.ones_like(start), edges)
    sums = {name: _binned(start, end, counts, edges)
            for name, counts in state_columns(records).items()}
    _add_holds(busy, sums, holds, edges)
    return _means(busy, sums, edges[:-1], width)


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


def rows(run: StoredRun, first: int, last: int, window: tuple[float, float], max_rows: int,
         after_s: float | None) -> list[dict[str, Any]] | None:
    """Each request's spans in the window, in the order it first appears (the same kinds and
    merging as the page's own timeline, frontend/static/js/state/history.js); None when more
    than `max_rows` requests appear. `after_s`: when the record after `last` starts (None:
    there is none yet)."""
    spans = spans_of(stored_records(run.path, run.requests, last, first), *window, max_rows,
                     after_s)
    if spans is None:
        return None
    index = request_table(run.requests).positions
    return [{"id": rid, "index": index.get(rid), "spans": [s[:3] for s in ss]}
            for rid, ss in spans.items()]


def spans_of(records: Iterable[dict[str, Any]], t0: float, t1: float, max_rows: int,
             after_s: float | None = None) -> dict[str, list[list[Any]]] | None:
    """Each request's spans in [t0, t1] over `records`, [kind, t0_s, t1_s, last iter] each,
    in the order it first appears; None when more than `max_rows` requests appear. A record
    that lists requests waiting for remote KV holds its waiting requests till the next record
    starts (`after_s` for the last one: None, till its own end)."""
    spans: dict[str, list[list[Any]]] = {}
    preempted: set[str] = set()
    for rec, next_s in _with_next(records, after_s):
        preempted.update(rec["preempted"])
        preempted.difference_update(rec["resumed"], (e["id"] for e in rec["scheduled"]))
        a = max(t0, rec["time_s"])
        end = rec["time_s"] + rec["step_time_ms"] / 1000.0
        b = min(t1, end)
        kv = rec.get("waiting_for_kv", ())  # P/D: admitted, its remote KV in flight
        held = next_s is not None and any(rid not in preempted for rid in kv)
        b_waiting = min(t1, max(end, next_s)) if held and next_s is not None else b
        if b > a:  # else the step before the window ended before it, or took no time
            kinds = {e["id"]: e.get("kind", "prefill") for e in rec["scheduled"]}
            for rid in rec["running"]:
                _push(spans, rid, kinds.get(rid, "stalled"), a, b, rec["iter"])
        if b_waiting > a:
            for rid in rec["waiting"]:
                kind = ("preempted" if rid in preempted else "waiting_for_kv" if rid in kv
                        else "waiting")
                _push(spans, rid, kind, a, b_waiting, rec["iter"])
        if len(spans) > max_rows:
            return None
    return spans


def _with_next(records: Iterable[dict[str, Any]],
               after_s: float | None) -> Iterator[tuple[dict[str, Any], float | None]]:
    """Each record with the start of the one after it (`after_s` after the last)."""
    prev = None
    for rec in records:
        if prev is not None:
            yield prev, rec["time_s"]
        prev = rec
    if prev is not None:
        yield prev, after_s


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
