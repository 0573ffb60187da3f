"""What the heavy jobs do inside their worker processes (api/jobs/workers.py): read a track's
records from its file by path and build the jsonl or Perfetto export, or the diagnosis; or turn its
finished requests (api/reports/done_requests.py) into the csv or bench export. Arguments and
results are plain picklable values; nothing here touches a session."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from servescope import exports
from servescope.api.jobs.workers import chunks
from servescope.api.records.run_store import open_reader
from servescope.api.reports.done_requests import DoneRequests
from servescope.api.wire.keyframes import load_keyframe
from servescope.api.wire.serialize import unpack
from servescope.core.config import EngineConfig
from servescope.core.records import BlockEvent, ScheduledColumns, StepRecord
from servescope.scenarios.diagnosis_check import diagnose_records
from servescope.traces.steps_servescope import record_from_dict


class TooLarge(Exception):
    kind = "too_large"


def records(path: Path, requests: Sequence[dict[str, Any]], upto: int,
            first: int = 0) -> Iterator[dict[str, Any]]:
    """Records first..upto in to_dict() form, each unpacked against the stream so far: from the
    last keyframe before `first` (the state after its record), one record at a time."""
    with open_reader(path) as store:
        at, text = store.keyframe_before(first - 1)
        state = load_keyframe(requests, json.loads(text))
        for packed in store.packed_records(upto, at + 1):
            rec = unpack(state, json.loads(packed))
            if rec["iter"] >= first:
                yield rec


def jsonl(path: Path, requests: list[dict[str, Any]], upto: int, limit: int) -> Iterator[bytes]:
    """The records as JSON lines until `limit` bytes; then a last line saying where it stopped."""
    lines = (json.dumps(r, separators=(",", ":")) + "\n" for r in records(path, requests, upto))
    return chunks(_capped(lines, limit))


def recording(path: Path, head: dict[str, Any], requests: list[dict[str, Any]], upto: int,
              limit: int) -> Iterator[bytes]:
    """The records as a servescope-steps recording (traces/recording.py), which `servescope`
    replays: the header line `head`, then the records, until `limit` bytes."""
    first = json.dumps(head, separators=(",", ":")) + "\n"
    lines = (json.dumps(r, separators=(",", ":")) + "\n" for r in records(path, requests, upto))
    return chunks(_capped(itertools.chain([first], lines), limit))


def _capped(lines: Iterator[str], limit: int) -> Iterator[str]:
    sent = 0
    for line in lines:
        sent += len(line)
        if sent > limit:
            yield json.dumps({"error": f"export stopped at {sent - len(line)} bytes: this "
                              f"server's max_export_bytes is {limit}"}) + "\n"
            return
        yield line


def requests_export(done: DoneRequests, fmt: str, summary: dict[str, Any],
                    config: EngineConfig, limit: int) -> Iterator[bytes]:
    """The per-request `csv`, or the `vllm bench serve` JSON (`bench`): built whole, refused
    over `limit`."""
    metrics = done.metrics()
    text = exports.requests_csv(metrics) if fmt == "csv" else json.dumps(
        exports.bench_json(summary, metrics, config))
    return _whole(text, fmt, limit)


def perfetto(path: Path, requests: list[dict[str, Any]], upto: int,
             limit: int) -> Iterator[bytes]:
    """The run as one Trace Event Format document (built whole: refused over `limit`)."""
    recs = [record_from_dict(r, k + 1) for k, r in enumerate(records(path, requests, upto))]
    # a step-clock workload has no arrival_s: its requests' tracks start at zero
    specs = [{**r, "arrival_s": r["arrival_s"] or 0.0} for r in requests]
    return _whole(json.dumps(exports.perfetto_trace(recs, specs)), "perfetto", limit)


def _whole(text: str, fmt: str, limit: int) -> Iterator[bytes]:
    """An export built whole, as its chunks; TooLarge over `limit` characters."""
    if len(text) > limit:
        raise TooLarge(f"the {fmt} export of this run is {len(text)} bytes, over this "
                       f"server's max_export_bytes ({limit}); export jsonl, which streams")
    return chunks(iter([text]))


def diagnose(path: Path, requests: list[dict[str, Any]], config: EngineConfig,
             specs: list[Any], first: int, upto: int, summary: dict[str, Any],
             check: bool) -> dict[str, Any]:
    """diagnose_records over records first..upto, with the summary of that window; the records
    stream from the file (memory does not grow with the window's length)."""
    recs = (stored_record(row) for row in records(path, requests, upto, first))
    return diagnose_records(config, specs, recs, summary, None, check)


def stored_record(row: dict[str, Any]) -> StepRecord:
    """record_from_dict for a record this server packed itself: its fields are known good, so
    unchecked (a tenth of record_from_dict's time, which was most of a diagnosis's)."""
    sched = row["scheduled"]
    columns = ScheduledColumns(
        [e["id"] for e in sched], np.array([e["n"] for e in sched], np.int64),
        np.array([e["start"] for e in sched], np.int64),
        np.array([e["sampled"] for e in sched], bool),
        np.array([e["kind"] == "prefill" for e in sched], bool))
    return StepRecord(
        step=row["step"], iter=row["iter"], time_s=float(row["time_s"]),
        step_time_ms=float(row["step_time_ms"]), columns=columns,
        rejected=tuple((r["id"], r["reason"]) for r in row["rejected"]),
        new_blocks={rid: tuple(b) for rid, b in row["new_blocks"].items()},
        block_events=tuple(BlockEvent("stored" if ev["type"] == "BlockStored" else "removed",
                                      tuple(ev["block_ids"]), ev["req"])
                           for ev in row["kv_events"]),
        num_cached_tokens=dict(row["num_cached_tokens"]), kv_waste=dict(row["kv_waste"]),
        num_free_blocks=row["num_free_blocks"], num_usable_blocks=row["num_usable_blocks"],
        token_budget=row["token_budget"], max_num_seqs=row["max_num_seqs"],
        arrivals=tuple(row["arrivals"]), new=tuple(row["new"]), resumed=tuple(row["resumed"]),
        preempted=tuple(row["preempted"]), finished=tuple(row["finished"]),
        released=tuple(row["released"]), freed_blocks=tuple(row["freed_blocks"]),
        running=tuple(row["running"]), waiting=tuple(row["waiting"]))
