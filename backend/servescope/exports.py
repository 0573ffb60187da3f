"""Run exports: `vllm bench serve`-compatible JSON, per-request CSV, and a Chrome/Perfetto trace
(Trace Event Format: steps as slices on an engine track, one track per request). A fleet's
rows carry their `replica` (a CSV column, a per-request list in the JSON) and each replica's
steps get a process of their own in the trace. Files are written atomically."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from servescope.core.config import EngineConfig
from servescope.core.records import StepRecord
from servescope.traces.recording import atomic_writer

ENGINE_PID, REQUEST_PID = 1, 2
REPLICA_PID = 3  # a fleet's replica r steps on process REPLICA_PID + r, after the requests'
BACKEND = "servescope-sim"  # what bench JSON names as its backend (vLLM: openai, vllm, ...)
CSV_COLUMNS = ("id", "arrival_s", "prompt_len", "output_len", "ttft_ms", "tpot_ms", "e2el_ms",
               "queue_ms", "itl_mean_ms", "itl_max_ms", "num_preemptions", "num_cached_tokens")
# a speculating run's rows also carry each request's draft tokens and accepted drafts (summed
# over its verifies); the exports add them and the acceptance rate, accepted / drafts
ACCEPTANCE_COLUMNS = ("drafts", "accepted", "acceptance_rate")
REPLICA_COLUMN = "replica"  # a fleet's rows: the replica that ran the request (0-based)


def speculates(requests: Sequence[dict[str, Any]]) -> bool:
    """Whether the rows carry acceptance (a run with a speculative_config)."""
    return any(r.get("drafts") is not None for r in requests)


def of_fleet(requests: Sequence[dict[str, Any]]) -> bool:
    """Whether the rows carry the replica each ran on (a fleet's run)."""
    return any(REPLICA_COLUMN in r for r in requests)


def acceptance_rate(row: dict[str, Any]) -> float | None:
    """A request's accepted drafts over its draft tokens; None where it had no drafts."""
    drafts = row.get("drafts") or 0
    return row.get("accepted", 0) / drafts if drafts else None


def bench_json(summary: dict[str, Any], requests: Sequence[dict[str, Any]],
               config: EngineConfig, date: datetime | None = None) -> dict[str, Any]:
    """Every key `vllm bench serve --save-result --save-detailed` writes (vLLM 0.33,
    vllm/benchmarks/serve.py main() and benchmark()): summary latencies in ms, per-request lists
    in seconds, in arrival order. `queue_times` is vLLM's client-side wait for a
    --max-concurrency slot, 0 for an open-loop simulation; the engine's own queueing (vLLM's
    queued-to-scheduled interval) is under servescope.engine_queue_times."""
    rows = sorted(requests, key=lambda r: (r["arrival_s"], str(r["id"])))
    arrivals = [float(r["arrival_s"]) for r in rows]
    when = date or datetime.now(UTC)
    out: dict[str, Any] = {
        "date": when.strftime("%Y%m%d-%H%M%S"),
        "endpoint_type": BACKEND,  # vLLM writes the backend twice, for backward compatibility
        "backend": BACKEND,
        "label": None,  # --label unset
        "model_id": config.model or "unspecified",
        "tokenizer_id": config.model or "unspecified",
        "num_prompts": len(rows) + int(summary.get("failed", 0) or 0),
        "request_rate": _request_rate(arrivals),
        "burstiness": 1.0,
        "max_concurrency": None,
    }
    out.update({k: v for k, v in summary.items() if not k.startswith("kv_")})
    out["request_goodput"] = None  # vLLM writes None unless --goodput names SLOs
    out["input_lens"] = [int(r["prompt_len"]) for r in rows]
    out["output_lens"] = [int(r["output_len"]) for r in rows]
    out["ttfts"] = [_s(r["ttft_ms"]) for r in rows]
    out["itls"] = [[x / 1000.0 for x in r["itl_ms"]] for r in rows]
    out["latencies"] = [_s(r["e2el_ms"]) for r in rows]
    out["start_times"] = arrivals
    out["queue_times"] = [0.0] * len(rows)  # no client-side concurrency limit
    out["generated_texts"] = [""] * len(rows)
    out["errors"] = [""] * len(rows)
    out["max_output_tokens_per_s"] = peak_output_tokens_per_s(out)
    out["max_concurrent_requests"] = peak_concurrency(out)
    out["rtfx"] = 0.0  # audio seconds per second: no audio input
    out["servescope"] = {"config": config.to_dict(), "note": "simulated, not measured",
                         "engine_queue_times": [_s(r.get("queue_ms")) for r in rows]}
    if of_fleet(rows):
        out["servescope"][REPLICA_COLUMN] = [r.get(REPLICA_COLUMN) for r in rows]
    if speculates(rows):
        out["servescope"].update({"drafts": [r.get("drafts") or 0 for r in rows],
                                  "accepted": [r.get("accepted") or 0 for r in rows],
                                  "acceptance_rates": [acceptance_rate(r) for r in rows]})
    return out


def peak_output_tokens_per_s(result: dict[str, Any]) -> float:
    """vLLM's max_output_tokens_per_s: tokens (first at start + ttft, then each ITL later)
    counted in one-second buckets from the first start; the fullest bucket."""
    starts = result["start_times"]
    if not starts:
        return 0.0
    origin = min(starts)
    end = max(s + lat for s, lat in zip(starts, result["latencies"], strict=True))
    buckets = np.zeros(int(np.ceil(end - origin)) + 1)
    for start, ttft, itl in zip(starts, result["ttfts"], result["itls"], strict=True):
        times = start + ttft + np.concatenate(([0.0], np.cumsum(itl)))
        index = (times - origin).astype(np.int64)
        np.add.at(buckets, index[(index >= 0) & (index < len(buckets))], 1)
    return float(buckets.max())


def peak_concurrency(result: dict[str, Any]) -> int:
    """vLLM's max_concurrent_requests: the most requests in flight over half-open
    [start, start + latency) intervals (a departure precedes an arrival at the same instant)."""
    events = sorted([(s, 1) for s in result["start_times"]]
                    + [(s + lat, -1) for s, lat in zip(result["start_times"],
                                                       result["latencies"], strict=True)])
    peak = current = 0
    for _, delta in events:
        current += delta
        peak = max(peak, current)
    return peak


def _s(ms: float | None) -> float | None:
    return None if ms is None else ms / 1000.0


def _request_rate(arrivals: list[float]) -> float | str:
    """vLLM records the configured rate; a simulation has the arrivals, so estimate it."""
    if len(arrivals) < 2 or max(arrivals) - min(arrivals) <= 0:
        return "inf"
    return (len(arrivals) - 1) / (max(arrivals) - min(arrivals))


def requests_csv(requests: Sequence[dict[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    columns = (CSV_COLUMNS + ((REPLICA_COLUMN,) if of_fleet(requests) else ())
               + (ACCEPTANCE_COLUMNS if speculates(requests) else ()))
    writer.writerow(columns)
    for r in sorted(requests, key=lambda r: (r["arrival_s"], str(r["id"]))):
        itl = r.get("itl_ms") or []
        derived = {"itl_mean_ms": float(np.mean(itl)) if itl else None,
                   "itl_max_ms": max(itl) if itl else None,
                   "drafts": r.get("drafts") or 0, "accepted": r.get("accepted") or 0,
                   "acceptance_rate": acceptance_rate(r)}
        writer.writerow(_cell({**r, **derived}.get(c)) for c in columns)
    return buffer.getvalue()


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def perfetto_trace(records: Iterable[StepRecord | tuple[int, StepRecord]],
                   requests: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Trace Event Format JSON (object form). ts and dur are microseconds of simulated time.
    `records`: one engine's, or a fleet's (replica, record) pairs, each replica a process."""
    events: list[dict[str, Any]] = [_meta("process_name", REQUEST_PID, 0, "requests")]
    order = sorted(requests, key=lambda r: (r["arrival_s"], str(r["id"])))
    tids = {str(r["id"]): index + 1 for index, r in enumerate(order)}
    for rid, tid in tids.items():
        events.append(_meta("thread_name", REQUEST_PID, tid, rid))
        events.append({"ph": "M", "name": "thread_sort_index", "pid": REQUEST_PID, "tid": tid,
                       "args": {"sort_index": tid}})
    spans: dict[str, list[list[Any]]] = {rid: [] for rid in tids}
    named: set[int] = set()
    for item in records:
        replica, record = item if isinstance(item, tuple) else (None, item)
        pid = ENGINE_PID if replica is None else REPLICA_PID + replica
        if pid not in named:
            named.add(pid)
            label = "engine" if replica is None else f"replica {replica}"
            events += [_meta("process_name", pid, 0, label), _meta("thread_name", pid, 0, "steps")]
        events.extend(_step_events(record, pid))
        _extend_spans(spans, record)
    for r in order:
        rid = str(r["id"])
        events.extend(_request_events(tids[rid], float(r["arrival_s"]), spans[rid], rid))
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"source": "servescope", "time": "simulated"}}


def _meta(name: str, pid: int, tid: int, label: str) -> dict[str, Any]:
    return {"ph": "M", "name": name, "pid": pid, "tid": tid, "args": {"name": label}}


def _us(seconds: float) -> float:
    return round(seconds * 1e6, 3)


def _step_events(record: StepRecord, pid: int) -> list[dict[str, Any]]:
    ts = _us(record.time_s)
    prefill = sum(e.n for e in record.scheduled if e.prefill)
    decode = sum(e.n for e in record.scheduled if not e.prefill)
    events: list[dict[str, Any]] = [{
        "ph": "X", "name": f"step {record.step}", "cat": "step", "pid": pid, "tid": 0,
        "ts": ts, "dur": round(_us(record.time_s + record.step_time_ms / 1000.0) - ts, 3),
        "args": {"num_scheduled_tokens": record.num_scheduled_tokens,
                 "num_prefill_tokens": prefill, "num_decode_tokens": decode,
                 "num_running": len(record.running), "num_waiting": len(record.waiting),
                 "preempted": list(record.preempted), "finished": list(record.finished)},
    }, {"ph": "C", "name": "kv_usage", "pid": pid, "ts": ts,
        "args": {"kv_usage": round(record.kv_usage, 6)}},
       {"ph": "C", "name": "requests", "pid": pid, "ts": ts,
        "args": {"running": len(record.running), "waiting": len(record.waiting)}}]
    for rid in record.preempted:
        events.append({"ph": "i", "name": f"preempt {rid}", "cat": "preempt", "s": "p",
                       "pid": pid, "tid": 0, "ts": ts})
    return events


def _extend_spans(spans: dict[str, list[list[Any]]], record: StepRecord) -> None:
    """Merge a request's consecutive steps of one kind into one [kind, start_s, end_s] span."""
    start = record.time_s
    end = start + record.step_time_ms / 1000.0
    for entry in record.scheduled:
        track = spans.setdefault(entry.id, [])
        kind = "prefill" if entry.prefill else "decode"
        if track and track[-1][0] == kind and abs(track[-1][2] - start) < 1e-12:
            track[-1][2] = end
        else:
            track.append([kind, start, end])


def _request_events(tid: int, arrival_s: float, spans: list[list[Any]],
                    rid: str) -> list[dict[str, Any]]:
    events = []
    cursor = arrival_s
    for kind, start, end in spans:
        if start > cursor:  # queued before admission, or waiting after a preemption
            events.append(_slice("waiting", tid, cursor, start, rid))
        events.append(_slice(kind, tid, start, end, rid))
        cursor = end
    return events


def _slice(name: str, tid: int, start: float, end: float, rid: str) -> dict[str, Any]:
    return {"ph": "X", "name": name, "cat": "request", "pid": REQUEST_PID, "tid": tid,
            "ts": _us(start), "dur": round(_us(end) - _us(start), 3), "args": {"id": rid}}


def write_json(path: Path, data: Any) -> None:
    with atomic_writer(Path(path)) as out:
        json.dump(data, out, separators=(",", ":"))


def write_text(path: Path, text: str) -> None:
    with atomic_writer(Path(path)) as out:
        out.write(text)
