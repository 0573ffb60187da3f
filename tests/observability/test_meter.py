"""The meter folds a simulated run's records into vLLM's stats: checked after every step
against the record itself, and at the end against the core's own per-request metrics and
run summary (computed by the engine, not from records)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from servescope.api.wire.serialize import normalize, request_info
from servescope.core.decode_stretch import DecodeStretch
from servescope.core.engine import Engine
from servescope.observability import columns as meter_columns
from servescope.observability.columns import PerRecord
from servescope.observability.histogram_cursor import HistogramCursor
from servescope.observability.meter import COUNTERS, Meter
from servescope.observability.spill import Spill
from servescope.scenarios.diagnosis_check import prepare
from servescope.scenarios.presets import load_preset


@pytest.fixture(scope="module")
def run():
    config, specs, _ = load_preset("kv-starvation")
    config, step_time = prepare(config)
    engine = Engine(config, specs, step_time)
    meter = Meter(request_info(specs), config.enable_prefix_caching)
    records = []
    for record in engine.run():
        rec = normalize(record.to_dict())
        before = meter.row(meter.num_records - 1)
        meter.observe(rec)
        after = meter.row(meter.num_records - 1)
        # vLLM samples after update_from_output: the step's finished requests have left
        assert after["num_requests_running"] == len(set(rec["running"]) - set(rec["finished"]))
        assert after["num_requests_waiting"] == len(rec["waiting"])
        assert after["kv_cache_usage_perc"] == pytest.approx(rec["kv_usage"])
        assert after["num_preemptions"] - before["num_preemptions"] == len(rec["preempted"])
        sampled = sum(1 for e in rec["scheduled"] if e["sampled"])
        assert after["generation_tokens"] - before["generation_tokens"] == sampled
        assert all(after[c] >= before[c] for c in COUNTERS)
        records.append(rec)
    return engine, meter, records


def test_the_last_row_equals_the_run_summary(run):
    engine, meter, _ = run
    summary = engine.summary()
    last = meter.row(meter.num_records - 1)
    assert summary["num_preemptions"] > 0  # the preset preempts: the counter is exercised
    assert last["generation_tokens"] == summary["total_output_tokens"]
    assert last["prompt_tokens"] == summary["total_input_tokens"]
    assert last["request_success"] == summary["completed"]
    assert last["num_preemptions"] == summary["num_preemptions"]
    assert last["prompt_tokens_local_compute"] + last["prompt_tokens_local_cache_hit"] \
        == summary["total_input_tokens"]
    assert len(meter.observations("time_to_first_token")[1]) == summary["completed"]


@pytest.mark.parametrize(("histogram", "key", "scale"), [
    ("time_to_first_token", "ttft_ms", 1e-3), ("e2e_request_latency", "e2el_ms", 1e-3),
    ("request_queue_time", "queue_ms", 1e-3), ("request_prompt_tokens", "prompt_len", 1),
])
def test_observations_match_the_cores_request_metrics(run, histogram, key, scale):
    engine, meter, _ = run
    expected = sorted(r[key] * scale for r in engine.request_metrics())
    assert sorted(meter.observations(histogram)[1]) == pytest.approx(expected, abs=1e-9)


def test_inter_token_latencies_match_the_cores(run):
    engine, meter, _ = run
    expected = sorted(x / 1000 for r in engine.request_metrics() for x in r["itl_ms"])
    assert sorted(meter.observations("inter_token_latency")[1]) == pytest.approx(expected,
                                                                              abs=1e-9)


@pytest.mark.parametrize("histogram", ["time_to_first_token", "inter_token_latency",
                                       "iteration_tokens"])
@pytest.mark.parametrize("array_repeats", [3, meter_columns.ARRAY_REPEATS])
def test_a_cursor_moved_back_and_forth_counts_as_a_fresh_one(run, histogram, array_repeats,
                                                             monkeypatch):
    """(Folding 3 repeats at a time, or the server's few thousand.)"""
    monkeypatch.setattr(meter_columns, "ARRAY_REPEATS", array_repeats)
    _, meter, _ = run
    buckets = [0.01, 0.02, 0.1, 1.0, 10.0]
    moved = HistogramCursor(meter, histogram, buckets)
    rng = random.Random(7)
    iters, observed = meter.observations(histogram)
    for pos in [rng.randrange(-1, meter.num_records) for _ in range(40)] + [-1]:
        fresh = HistogramCursor(meter, histogram, buckets)
        counts, total, n = moved.at(pos)
        want_counts, want_total, want_n = fresh.at(pos)
        assert (counts, n) == (want_counts, want_n)
        assert total == pytest.approx(want_total)
        values = [v for v, it in zip(observed, iters, strict=True) if it <= pos]
        assert counts == [int((np.array(values) <= b).sum()) for b in buckets] + [len(values)]
        total = 0.0
        for v in values:  # the sum the observations add up to one by one, bit for bit
            total += v
        assert fresh.at(pos)[1] == total


def test_equal_latencies_of_a_step_are_kept_as_one_run(run):
    """A decode step's requests share their inter-token latency: far fewer runs than
    observations, and the runs expand to the observations in order."""
    _, meter, records = run
    runs = meter.histograms["inter_token_latency"]
    iters, values = meter.observations("inter_token_latency")
    assert len(values) == len(runs) == sum(
        1 for rec in records for e in rec["scheduled"] if e["sampled"]) - len(
        meter.observations("time_to_first_token")[1])
    assert len(runs.values) < len(values) / 3
    assert iters == sorted(iters)


def test_a_position_not_yet_folded_is_an_error(run):
    _, meter, _ = run
    with pytest.raises(IndexError):
        meter.row(meter.num_records)
    assert set(meter.row(-1).values()) == {0.0}


def columns(meter: Meter) -> list[bytes]:
    """Every column the meter keeps, as bytes."""
    out = [a.tobytes() for a in (meter.running, meter.waiting, meter.kv_usage,
                                 meter.generation_tokens, meter.start_s)]
    out += [a.tobytes() for c in meter.changes.values() for a in (c.iters, c.values)]
    for h in meter.histograms.values():
        out += [a.tobytes() for a in ((h.values,) if isinstance(h, PerRecord)
                                      else (h.iters, h.values, h.ends))]
    return [*out, repr(meter.last_end_s).encode()]


def test_decode_steps_folded_in_bulk_keep_what_one_by_one_keeps(tmp_path):
    """A decode stretch's steps through observe_decodes give the meter observe() gives their
    records: every column, byte for byte (the kv-starvation run's runs, fast-forwarded); so
    does a meter that spills its columns to a file in chunks of 5 values (a server's)."""
    config, specs, _ = load_preset("kv-starvation")
    config, step_time = prepare(config)
    engine = Engine(config, specs, step_time)
    spill = Spill(tmp_path, chunk=5)
    one, bulk, spilled = (Meter(request_info(specs), config.enable_prefix_caching, s)
                          for s in (None, None, spill))
    num_runs = 0
    while (item := engine.advance()) is not None:
        if isinstance(item, DecodeStretch):
            recs = [normalize(r.to_dict()) for r in item.records()]
            for rec in recs:
                one.observe(rec)
                assert rec["scheduled"] and [e["id"] for e in rec["scheduled"]] == recs[0][
                    "running"] and not rec["waiting"]
            for meter in (bulk, spilled):
                meter.observe_decodes(recs[0]["running"], [r["time_s"] for r in recs],
                                      [r["step_time_ms"] for r in recs],
                                      [r["kv_usage"] for r in recs], recs[-1]["finished"])
            num_runs += len(recs) > 1
        else:
            for meter in (one, bulk, spilled):
                meter.observe(normalize(item.to_dict()))
    assert num_runs > 5
    assert columns(bulk) == columns(one)
    assert columns(spilled) == columns(one)
    assert spill.size > 8 * one.num_records  # most of it is in the file
    assert spilled.start_s.memory_bytes <= 8 * 5


def test_a_meter_that_spills_reads_back_what_one_in_memory_reads(run, tmp_path):
    """Rows, positions in time and histogram cursors, moved at random, read through a meter
    whose columns are mostly in a file equal the in-memory meter's, bit for bit."""
    _, meter, records = run
    spilled = Meter(meter.requests, meter.enable_prefix_caching, Spill(tmp_path, chunk=7))
    for rec in records:
        spilled.observe(rec)
    rng = random.Random(3)
    cursors = [(HistogramCursor(m, name, [0.01, 0.1, 1.0, 64.0]) for m in (meter, spilled))
               for name in ("inter_token_latency", "iteration_tokens", "time_to_first_token")]
    pairs = [tuple(c) for c in cursors]
    for pos in [rng.randrange(-1, meter.num_records) for _ in range(60)]:
        assert spilled.row(pos) == meter.row(pos)
        t = rng.uniform(-1.0, meter.last_end_s + 1.0)
        assert spilled.index_at_time(t) == meter.index_at_time(t)
        for mine, theirs in pairs:
            assert theirs.at(pos) == mine.at(pos)
    for name in meter.histograms:
        assert spilled.observations(name) == meter.observations(name)
