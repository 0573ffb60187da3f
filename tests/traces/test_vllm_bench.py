import json

import pytest
from support.trace_load import load

from servescope.traces.errors import TraceFormatError

RUN = {"date": "20250101-000000", "backend": "vllm", "num_prompts": 3, "request_rate": "inf",
       "duration": 2.5, "completed": 2, "failed": 1, "request_goodput:": 0.8,
       "input_lens": [100, 200, 300], "output_lens": [10, 0, 30],
       "ttfts": [0.05, 0.0, 0.07], "itls": [[0.01] * 9, [], [0.02] * 29],
       "latencies": [0.2, 0.0, 0.9], "start_times": [1000.5, 1000.25, 1001.0],
       "errors": ["", "timeout", ""]}


def test_arrivals_from_start_times_and_measurements_kept(write):
    specs, report = load(write("r.json", json.dumps(RUN, indent=2)), "vllm-bench")
    assert [s.id for s in specs] == ["b0", "b2"]
    assert [s.arrival_s for s in specs] == [0.25, 0.75]  # minus min(start_times) = 1000.25
    assert specs[0].measured == {"ttft_s": 0.05, "itl_s": [0.01] * 9, "e2el_s": 0.2}
    assert report.skipped == {"failed": 1}
    assert report.meta["measured_summary"]["request_goodput"] == 0.8
    assert report.meta["measured_summary"]["duration"] == 2.5


def test_every_list_but_lengths_is_optional(write):
    run = {"input_lens": [5, 6], "output_lens": [1, 2]}
    specs, report = load(write("r.json", json.dumps(run)), "vllm-bench")
    assert [(s.arrival_s, s.measured) for s in specs] == [(0.0, None), (0.0, None)]
    assert report.notes


def test_jsonl_picks_a_run(write):
    runs = [dict(RUN, input_lens=[n] * 3) for n in (1, 2, 3)]
    path = write("r.jsonl", "".join(json.dumps(r) + "\n" for r in runs))
    assert load(path, "vllm-bench")[0][0].prompt_len == 3
    assert load(path, "vllm-bench", run=0)[0][0].prompt_len == 1
    with pytest.raises(TraceFormatError):
        load(path, "vllm-bench", run=5)


@pytest.mark.parametrize("change, field", [
    ({"input_lens": None}, "input_lens"),
    ({"ttfts": [0.1]}, "ttfts"),
    ({"output_lens": ["x", 0, 2]}, "output_lens[0]"),
    ({"start_times": [1, 2, "nan"]}, "start_times"),
    ({"itls": [[0.1], [], ["a"]]}, "itls[2]"),
])
def test_bad_fields_are_named(write, change, field):
    run = {k: v for k, v in {**RUN, **change}.items() if v is not None}
    with pytest.raises(TraceFormatError) as info:
        load(write("r.json", json.dumps(run)), "vllm-bench")
    assert info.value.field == field


def test_bytes_that_are_not_text_after_a_first_line_are_a_format_error(tmp_path):
    path = tmp_path / "r.json"
    path.write_bytes(b"{\n\xc2")  # one line of text, then half a UTF-8 character
    with pytest.raises(TraceFormatError, match="not UTF-8 text"):
        load(path, "vllm-bench")
