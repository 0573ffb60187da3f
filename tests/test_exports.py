"""Exports open in the tools they target: bench JSON, per-request CSV, Perfetto trace."""

from __future__ import annotations

import csv
import io
import json

import pytest
from support.bench_reader import read
from support.factories import make_config
from support.trace_events import validate

from servescope import exports
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


# vLLM 0.33 vllm/benchmarks/serve.py: main() writes the setup keys, benchmark() the results.
VLLM_033_KEYS = {
    "date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts",
    "request_rate", "burstiness", "max_concurrency", "duration", "completed", "failed",
    "total_input_tokens", "total_output_tokens", "request_throughput", "request_goodput",
    "output_throughput", "total_token_throughput", "input_lens", "output_lens", "ttfts",
    "itls", "latencies", "start_times", "queue_times", "generated_texts", "errors",
    "max_output_tokens_per_s", "max_concurrent_requests", "rtfx"}


def test_bench_json_has_every_key_vllm_033_writes(run):
    config, _, summary, requests = run
    assert VLLM_033_KEYS - set(bench_json(summary, requests, config)) == set()


def test_queue_times_are_the_clients_wait_and_engine_queueing_is_kept_apart():
    """vLLM's queue_times is client_queue_time (start - arrival around the --max-concurrency
    semaphore, serve.py limited_request_func): an open-loop simulation has none."""
    config = make_config(num_gpu_blocks=64, max_num_seqs=1)
    specs = [RequestSpec("a", 8, 4, arrival_step=0), RequestSpec("b", 8, 4, arrival_step=0)]
    engine = Engine(config, specs)
    engine.run_to_end()
    data = bench_json(engine.summary(), engine.request_metrics(), config)
    assert data["queue_times"] == [0.0, 0.0]
    engine_queue = data["servescope"]["engine_queue_times"]
    assert engine_queue[0] == 0.0 and engine_queue[1] > 0  # b waited for a's slot


def test_peaks_follow_vllms_buckets_and_half_open_intervals():
    """serve.py calculate_metrics: tokens at start + ttft + cumulative ITLs, counted in
    one-second buckets from the first start; concurrency over [start, start + latency) with a
    departure before an arrival at the same instant."""
    result = {"start_times": [0.0, 1.0, 2.5], "latencies": [1.0, 1.4, 0.2],
              "ttfts": [0.2, 0.1, 0.1], "itls": [[0.3, 0.3], [0.1, 0.1, 0.1], [0.05]]}
    # tokens at 0.2, 0.5, 0.8 | 1.1, 1.2, 1.3, 1.4 | 2.6, 2.65 -> buckets 3, 4, 2
    assert exports.peak_output_tokens_per_s(result) == 4.0
    # a ends at 1.0 exactly as b starts: never both; b (1.0-2.4) and c (2.5-2.7) never overlap
    assert exports.peak_concurrency(result) == 1
    result["start_times"][2] = 2.0
    assert exports.peak_concurrency(result) == 2


def test_a_speculating_runs_rows_carry_each_requests_acceptance(run):
    """Rows with `drafts` and `accepted` (a run with a speculative_config) add both and
    accepted / drafts to the CSV and to bench JSON's servescope section; rows without them
    export exactly as before."""
    config, _, _, requests = run
    plain_csv, plain_bench = requests_csv(requests), bench_json({}, requests, config)
    assert "acceptance_rate" not in plain_csv and "acceptance_rates" not in plain_bench[
        "servescope"]
    spec = [{**r, "drafts": 6 if k % 2 else 0, "accepted": 3 if k % 2 else 0}
            for k, r in enumerate(requests)]
    rows = list(csv.DictReader(io.StringIO(requests_csv(spec))))
    by_id = {r["id"]: r for r in rows}
    for k, r in enumerate(requests):
        got = by_id[str(r["id"])]
        assert (got["drafts"], got["accepted"]) == (("6", "3") if k % 2 else ("0", "0"))
        assert got["acceptance_rate"] == ("0.5" if k % 2 else "")
    extra = bench_json({}, spec, config)["servescope"]
    assert sorted(extra["acceptance_rates"], key=lambda x: x is None) == (
        [0.5] * (len(spec) // 2) + [None] * (len(spec) - len(spec) // 2))
