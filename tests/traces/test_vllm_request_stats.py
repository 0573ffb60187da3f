"""vLLM per-request stats (RequestStateStats names): arrivals, what was measured, timed from
arrival as vLLM times it, errors, LLMServingSim's renamed dumps and the shared copies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.trace_load import load

from servescope.traces import registry
from servescope.traces.errors import TraceFormatError

# vLLM 0.33 vllm/v1/metrics/stats.py RequestStateStats fields, plus the request's id and
# num_prompt_tokens. first_token_latency is wall-clock from arrival: a's request waited 0.05 s
# in the frontend before the engine core queued it (queued_ts 50.0), so its TTFT is
# 0.05 + (50.3 - 50.0) = 0.35 s, not the 0.3 s the engine's own stamps span.
ROWS = [
    {"request_id": "a", "num_prompt_tokens": 100, "num_generation_tokens": 5,
     "arrival_time": 1700000000.5, "queued_ts": 50.0, "scheduled_ts": 50.1,
     "first_token_ts": 50.3, "last_token_ts": 50.7, "first_token_latency": 0.35,
     "is_corrupted": False},
    {"request_id": "b", "num_prompt_tokens": 30, "num_generation_tokens": 1,
     "arrival_time": 1700000000.0, "queued_ts": 49.5, "scheduled_ts": 49.5,
     "first_token_ts": 49.6, "last_token_ts": 49.6, "first_token_latency": 0.1,
     "is_corrupted": False},
]
DUMP_NAMES = {"num_prompt_tokens": "input_toks", "num_generation_tokens": "output_toks"}
SHARED = Path(__file__).resolve().parents[2] / ".." / "shared"
CALIBRATION = SHARED / "measured" / "calibration.json"


def _text(rows):
    return "".join(json.dumps(r) + "\n" for r in rows)


def test_arrivals_are_relative_and_each_request_keeps_its_measurements(write):
    specs, report = load(write("r.jsonl", _text(ROWS)), "vllm-request-stats")
    assert [(s.id, s.arrival_s, s.prompt_len, s.output_len) for s in specs] == [
        ("b", 0.0, 30, 1), ("a", 0.5, 100, 5)]
    a = specs[1].measured
    # TTFT from arrival (IterationStats.update_from_output), E2E from arrival too
    # (update_from_finished_request: e2e_latency = now - arrival_time)
    assert a["ttft_s"] == pytest.approx(0.35) and a["e2el_s"] == pytest.approx(0.35 + 0.4)
    # tpot = decode_time / (num_generation_tokens - 1); queue = scheduled_ts - queued_ts
    assert a["tpot_s"] == pytest.approx(0.1) and a["queue_s"] == pytest.approx(0.1)
    assert "tpot_s" not in specs[0].measured  # one output token: no time per output token
    summary = report.meta["measured_summary"]
    assert summary["completed"] == 2
    assert summary["mean_ttft_ms"] == pytest.approx(225.0)
    assert summary["mean_tpot_ms"] == pytest.approx(100.0)
    assert any("from each request's arrival" in n for n in report.notes)


def test_an_llmservingsim_dump_is_read_and_says_it_is_timed_from_queued(write):
    rows = [{DUMP_NAMES.get(k, k): v for k, v in r.items() if k != "first_token_latency"}
            for r in ROWS]
    path = write("r.jsonl", _text(rows))
    assert registry.detect(path) == "vllm-request-stats"
    specs, report = load(path, "vllm-request-stats")
    assert [(s.prompt_len, s.output_len) for s in specs] == [(30, 1), (100, 5)]
    assert specs[1].measured["ttft_s"] == pytest.approx(0.3)  # first token - queued
    assert any("from queued_ts, not from arrival" in n for n in report.notes)


def test_detected_from_its_fields(write):
    assert registry.detect(write("r.jsonl", _text(ROWS))) == "vllm-request-stats"


@pytest.mark.parametrize(("change", "field"), [
    ({"first_token_ts": 49.0}, "first_token_ts"),
    ({"num_generation_tokens": "five"}, "num_generation_tokens"),
    ({"queued_ts": None}, "queued_ts"), ({"first_token_latency": -1}, "first_token_latency")])
def test_bad_rows_name_the_line_and_field(write, change, field):
    rows = [ROWS[1], {**ROWS[0], **change}]
    with pytest.raises(TraceFormatError) as err:
        load(write("r.jsonl", _text(rows)), "vllm-request-stats")
    assert (err.value.line, err.value.field) == (2, field)


def test_a_dumps_bad_field_is_named_as_the_file_spells_it(write):
    row = {DUMP_NAMES.get(k, k): v for k, v in ROWS[0].items() if k != "first_token_latency"}
    with pytest.raises(TraceFormatError) as err:
        load(write("r.jsonl", _text([{**row, "output_toks": "five"}])), "vllm-request-stats")
    assert err.value.field == "output_toks"


def test_a_missing_field_is_named(write):
    row = {k: v for k, v in ROWS[0].items() if k != "last_token_ts"}
    with pytest.raises(TraceFormatError) as err:
        load(write("r.jsonl", _text([row])), "vllm-request-stats")
    assert err.value.field == "last_token_ts" and "missing" in str(err.value)


@pytest.mark.skipif(not CALIBRATION.exists(), reason="../shared/measured not present")
def test_the_shared_llmservingsim_traces_give_the_published_latencies():
    """calibration.json copies LLMServingSim's own summary of each run (vLLM's stats)."""
    for case in json.loads(CALIBRATION.read_text()):
        trace = case["workload"].get("measured_request_trace_file") if isinstance(
            case.get("workload"), dict) else None
        if not trace:
            continue
        path = SHARED / "traces" / "llmservingsim" / Path(trace["staged_copy"]).name
        specs, report = load(path, "vllm-request-stats")
        assert len(specs) == case["workload"]["num_requests"]
        published, ours = case["measured"]["summary"], report.meta["measured_summary"]
        for theirs, mine in (("ttft_mean", "mean_ttft_ms"), ("ttft_p99", "p99_ttft_ms"),
                             ("tpot_mean", "mean_tpot_ms"), ("latency_p90", "p90_e2el_ms")):
            assert ours[mine] == pytest.approx(published[theirs], abs=0.6), (path.name, theirs)
