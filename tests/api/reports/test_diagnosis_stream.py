"""A diagnosis streams a track's stored records: the same answer as from the records held in a
list (the whole run, and windows that start at a keyframe, just after one, or at the start),
the same numbers as the list-based measures, and a run diagnosed in a worker process whose
memory budget is too small to hold its records."""

from __future__ import annotations

import dataclasses
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.tracks import run_to_end, stored_records

from servescope.api.errors import WorkerError
from servescope.api.jobs.workers import Worker
from servescope.api.records.track_source import engine_source
from servescope.api.reports import work as job_work
from servescope.api.sessions.track import Track
from servescope.api.wire.serialize import request_info
from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.records import StepRecord
from servescope.core.request import RequestSpec
from servescope.scenarios.diagnosis_check import diagnose_records
from servescope.traces.steps_servescope import record_from_dict

# 16 slots and a 64-token budget over 256 blocks of 16: admission waits for slots, budget and
# blocks in turn, and long decodes make runs of decode steps between prefills
CONFIG = EngineConfig(num_gpu_blocks=80, block_size=16, max_num_seqs=16,
                      max_num_batched_tokens=64)


def specs(n: int, output_len: int) -> list[RequestSpec]:
    return [RequestSpec(id=f"r{k}", prompt_len=20 + k % 50, output_len=output_len + k % 13,
                        arrival_s=k * 0.01) for k in range(n)]


def stored_run(tmp_path: Path, workload: list[RequestSpec]) -> Track:
    """The workload simulated to its end into a track's store."""
    engine = Engine(CONFIG, workload)
    track = Track(0, engine_source(engine), request_info(workload), CONFIG.num_gpu_blocks, 16,
                  1_000_000, tmp_path / "runs" / "d-0.sqlite3", summary=engine.summary)
    run_to_end(track)
    assert track.error is None
    return track


def held(track: Track) -> list[StepRecord]:
    """Every stored record as a StepRecord, all in memory (how a diagnosis read them before)."""
    return [record_from_dict(r, k + 1) for k, r in enumerate(stored_records(track))]


def reference_stats(records: list[StepRecord]) -> dict[str, float]:
    """The step measures by their definitions (core/diagnose_evidence.py), over a list."""
    causes: Counter[str] = Counter()
    for r in records:
        if r.waiting:
            causes["kv" if r.preempted or r.kv_usage >= 0.9 else
                   "slots" if len(r.running) >= r.max_num_seqs else
                   "budget" if r.num_scheduled_tokens >= r.token_budget else "other"] += 1
    usage = np.array([r.kv_usage for r in records])
    chunks = Counter(e.id for r in records for e in r.scheduled if e.prefill)
    decodes = [(r.step_time_ms, sum(e.n for e in r.scheduled if e.prefill))
               for r in records if any(not e.prefill for e in r.scheduled)]
    t, p = np.array([d[0] for d in decodes]), np.array([d[1] for d in decodes])
    tail = t >= 1.5 * np.median(t)
    return {**{f"blocked_{k}_steps": causes[k] for k in ("kv", "slots", "budget", "other")},
            "kv_usage_mean": usage.mean(), "kv_usage_p95": np.percentile(usage, 95),
            "prefill_chunks_mean": np.mean(list(chunks.values())),
            "prefill_chunks_max": max(chunks.values()),
            "decode_step_median_ms": np.median(t), "decode_step_p99_ms": np.percentile(t, 99),
            "decode_step_tail_share": tail.mean(), "mixed_step_share": (p > 0).mean(),
            "tail_steps_with_prefill_share": (p[tail] > 0).mean() if tail.any() else 0.0}


def diagnosed(track: Track, workload: list[RequestSpec], first: int, upto: int) -> Any:
    return job_work.diagnose(track.store.path, track.requests, CONFIG, workload, first, upto,
                             track.summary or {}, False)


def keyframe_iters(track: Track) -> list[int]:
    with sqlite3.connect(track.store.path) as db:
        return [i for (i,) in db.execute("SELECT iter FROM keyframes WHERE iter >= 0")]


def test_the_streamed_diagnosis_equals_the_one_over_held_records(tmp_path) -> None:
    workload = specs(40, 60)
    track = stored_run(tmp_path, workload)
    records = held(track)
    summary = track.summary or {}
    whole = diagnosed(track, workload, 0, track.head)
    assert whole == diagnose_records(CONFIG, workload, records, summary, None, False)
    expected = reference_stats(records)
    assert {k: whole["stats"][k] for k in expected} == {
        k: round(float(v), 6) for k, v in expected.items()}
    assert all(whole["stats"][f"blocked_{k}_steps"] > 0 for k in ("kv", "slots", "budget"))
    kf = keyframe_iters(track)[1]  # a window from a keyframe's record needs the one before it
    for first, upto in ((0, 57), (kf, track.head), (kf + 1, kf + 30), (kf - 1, kf + 1)):
        window = records[first:upto + 1]
        assert diagnosed(track, workload, first, upto) == diagnose_records(
            CONFIG, workload, window, summary, None, False), (first, upto)
        assert diagnosed(track, workload, first, upto)["stats"]["num_steps"] == len(window)


def fields(record: StepRecord) -> dict[str, Any]:
    out = {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}
    columns = out.pop("columns")
    out.update({name: (getattr(columns, name), getattr(columns, name).dtype.str)
                if name != "ids" else columns.ids for name in ("ids", "n", "start", "sampled",
                                                               "prefill")})
    return {k: (v[0].tolist(), v[1]) if isinstance(v, tuple) and len(v) == 2 and
            isinstance(v[0], np.ndarray) else (type(v).__name__, v) for k, v in out.items()}


def test_a_stored_record_reads_back_as_record_from_dict_reads_it(tmp_path) -> None:
    track = stored_run(tmp_path, specs(40, 60))
    rows = list(stored_records(track))
    assert any(r["kv_events"] for r in rows) and any(r["preempted"] for r in rows)
    for row in rows:
        assert fields(job_work.stored_record(row)) == fields(record_from_dict(row, 1))


def materialise(*args: Any) -> int:
    """What a diagnosis did before: every record of the window held at once."""
    path, requests, _, _, first, upto = args[:6]
    rows = job_work.records(path, requests, upto, first)
    return len([record_from_dict(row, row["iter"] + 1) for row in rows])


def in_worker(fn: Any, args: tuple[Any, ...], budget: int) -> Any:
    worker = Worker(fn, args, budget, False)
    try:
        return worker._recv(120)[1]
    finally:
        worker.stop()


def test_a_long_run_is_diagnosed_in_a_worker_whose_budget_cannot_hold_its_records(
        tmp_path) -> None:
    workload = specs(100, 400)
    track = stored_run(tmp_path, workload)
    # about 2.8 KB a held record: over 20 MiB for them all; the stream needs SQLite's page
    # cache (at most 4 MiB, api/records/run_store.py) and a few small objects
    assert track.head + 1 > 8000
    args = (track.store.path, track.requests, CONFIG, workload, 0, track.head,
            track.summary or {}, False)
    budget = 8 * 1024 * 1024
    with pytest.raises(WorkerError) as held_records:
        in_worker(materialise, args, budget)
    assert held_records.value.kind == "memory"
    result = in_worker(job_work.diagnose, args, budget)
    assert result["stats"]["num_steps"] == track.head + 1
    assert result == in_worker(job_work.diagnose, args, 0)  # the same with no budget at all


def test_a_window_of_stored_records_starts_with_its_first_record_wherever_keyframes_fall(
        tmp_path) -> None:
    track = stored_run(tmp_path, specs(40, 60))
    records = list(stored_records(track))
    for kf in keyframe_iters(track)[:3]:
        for first in (kf - 1, kf, kf + 1):
            assert list(stored_records(track, first + 5, first)) == records[first:first + 6]
