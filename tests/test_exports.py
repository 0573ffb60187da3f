"""Exports open in the tools they target: bench JSON, per-request CSV, Perfetto trace."""

from __future__ import annotations

import csv
import io
import json

import pytest
from support.bench_reader import read
from support.factories import make_config
from support.trace_events import validate

from servescope.core.engine import Engine
from servescope.core.request import RequestSpec
from servescope.exports import bench_json, perfetto_trace, requests_csv, write_json


@pytest.fixture(scope="module")
def run():
    config = make_config(num_gpu_blocks=24, max_num_batched_tokens=16)
    specs = [RequestSpec("a", 20, 6, arrival_step=0), RequestSpec("b", 12, 9, arrival_step=1),
             RequestSpec("c", 30, 4, arrival_step=3), RequestSpec("d", 8, 12, arrival_step=3)]
    engine = Engine(config, specs)
    records = list(engine.run())
    return config, records, engine.summary(), engine.request_metrics()


def test_bench_json_reads_like_a_benchmark(run, tmp_path):
    config, _, summary, requests = run
    path = tmp_path / "bench.json"
    write_json(path, bench_json(summary, requests, config))
    row = read(path)
    assert row["completed"] == 4
    assert row["sum_output_lens"] == 6 + 9 + 12 + 4 == row["total_output_tokens"]
    # Units: summary in ms, lists in seconds; the two must agree.
    assert row["mean_ttft_from_list_ms"] == pytest.approx(row["mean_ttft_ms"])
    assert row["mean_itl_from_list_ms"] == pytest.approx(row["mean_itl_ms"])
    assert row["num_itls"] == sum(n - 1 for n in (6, 9, 12, 4))


def test_bench_json_is_in_arrival_order_with_vllm_list_shapes(run):
    config, _, summary, requests = run
    data = bench_json(summary, requests, config)
    assert data["input_lens"] == [20, 12, 30, 8]  # c and d arrive together: by id
    assert [len(x) for x in data["itls"]] == [n - 1 for n in data["output_lens"]]
    assert data["start_times"] == sorted(data["start_times"])


def test_csv_has_one_row_per_request(run):
    _, _, _, requests = run
    rows = list(csv.DictReader(io.StringIO(requests_csv(requests))))
    assert sorted(r["id"] for r in rows) == ["a", "b", "c", "d"]
    by_id = {r["id"]: r for r in rows}
    assert int(by_id["d"]["output_len"]) == 12
    assert float(by_id["a"]["ttft_ms"]) > 0


def test_perfetto_trace_is_valid_trace_event_json(run, tmp_path):
    _, records, _, requests = run
    trace = perfetto_trace(records, requests)
    path = tmp_path / "trace.json"
    write_json(path, trace)
    loaded = json.loads(path.read_text())
    assert validate(loaded) == []
    steps = [e for e in loaded["traceEvents"] if e.get("cat") == "step"]
    assert len(steps) == len(records)
    names = {e["args"]["name"] for e in loaded["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] == 2}
    assert names == {"a", "b", "c", "d"}


def test_request_tracks_cover_prefill_and_decode_without_gaps(run):
    _, records, _, requests = run
    events = perfetto_trace(records, requests)["traceEvents"]
    a_tid = next(e["tid"] for e in events if e["ph"] == "M" and e["pid"] == 2
                 and e["name"] == "thread_name" and e["args"]["name"] == "a")
    spans = [e for e in events if e["ph"] == "X" and e["pid"] == 2 and e["tid"] == a_tid]
    kinds = [e["name"] for e in spans]
    assert kinds[0] == "prefill" and "decode" in kinds
    for left, right in zip(spans, spans[1:], strict=False):
        assert left["ts"] + left["dur"] == pytest.approx(right["ts"])


def test_the_validator_catches_broken_traces():
    assert validate({"traceEvents": [{"ph": "X", "name": "s", "pid": 1, "tid": 1, "ts": 0}]})
    overlap = [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
               {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 5, "dur": 10}]
    assert validate(overlap)
    nested = [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
              {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 2, "dur": 3}]
    assert validate(nested) == []
    assert validate({"traceEvents": [{"ph": "C", "name": "c", "pid": 1, "ts": 0,
                                      "args": {"x": "high"}}]})


def test_a_failed_write_leaves_nothing_behind(tmp_path):
    path = tmp_path / "out.json"
    with pytest.raises(TypeError):
        write_json(path, {"bad": object()})
    assert list(tmp_path.iterdir()) == []
