"""inference-perf's per-request report (per_request_lifecycle_metrics.json) read as measured:
reportgen/base.py summarize_requests' rules on a hand-made report."""

from __future__ import annotations

import json

import pytest
from support.trace_load import load

from servescope.traces import registry
from servescope.traces.errors import TraceFormatError


def _row(start, end, prompt, output, times, usage=None, error=None):
    return {"start_time": start, "end_time": end, "request": "{}", "response": "",
            "info": {"request_metrics": {"text": {"input_tokens": prompt}},
                     "response_metrics": {"output_tokens": output, "server_usage": usage,
                                          "response_chunks": [], "chunk_times": times,
                                          "output_token_times": times},
                     "extra_info": {}, "lora_adapter": None, "labels": {},
                     "input_tokens": prompt},
            "error": error}


ROWS = [
    _row(100.5, 101.5, 40, 5, [100.7, 100.9, 101.1, 101.3, 101.5]),
    _row(100.0, 100.4, 20, 3, [100.1, 100.3], usage={"completion_tokens": 3}),
    _row(100.2, 100.3, 10, 0, [], error={"error_type": "Timeout", "error_msg": "x"}),
]


def test_each_request_keeps_what_inference_perf_measured(write):
    specs, report = load(write("per_request_lifecycle_metrics.json", json.dumps(ROWS)),
                         "inference-perf-requests")
    assert [(s.arrival_s, s.prompt_len, s.output_len) for s in specs] == [
        (0.0, 20, 3), (0.5, 40, 5)]
    late = specs[1].measured
    # ttft = first token time - start; tpot = (last - first) / (output tokens - 1)
    assert late["ttft_s"] == pytest.approx(0.2) and late["tpot_s"] == pytest.approx(0.2)
    assert late["e2el_s"] == pytest.approx(1.0)  # end - start
    # the server's usage.completion_tokens (3) is the count, not the chunks seen (2)
    assert specs[0].measured["tpot_s"] == pytest.approx(0.2 / 2)
    assert report.skipped["failed"] == 1
    assert report.meta["measured_summary"]["completed"] == 2
    assert report.meta["measured_summary"]["mean_e2el_ms"] == pytest.approx(700.0)


def test_detected_from_its_keys(write):
    path = write("r.json", json.dumps(ROWS, indent=1))
    assert registry.detect(path) == "inference-perf-requests"


def test_a_broken_row_names_its_index_and_field(write):
    bad = [ROWS[0], {**ROWS[1], "start_time": "soon"}]
    with pytest.raises(TraceFormatError) as err:
        load(write("r.json", json.dumps(bad)), "inference-perf-requests")
    assert err.value.field == "[1].start_time" and "soon" not in str(err.value)
