import gzip
import json

import pytest
from support.paths import shared_path
from support.trace_load import load

from servescope.traces import registry
from servescope.traces.errors import TraceFormatError
from servescope.traces.options import TraceOptions

SHARED = [("AzureLLMInferenceTrace_code.csv", "azure"),
          ("AzureLLMInferenceTrace_conv.csv", "azure"),
          ("BurstGPT_1.head105.csv", "burstgpt"), ("BurstGPT_3.head58.csv", "burstgpt"),
          ("conversation_trace.jsonl", "mooncake"), ("synthetic_trace.jsonl", "mooncake"),
          ("sharegpt_8k_filtered_stats_llama2_tokenizer.csv", "sharegpt-stats"),
          ("test_trace.csv", "splitwise")]


@pytest.mark.parametrize("name, fmt", SHARED)
def test_every_shared_trace_is_detected(name, fmt):
    assert registry.detect(shared_path("traces", name)) == fmt


def test_detection_of_the_other_formats(write):
    assert registry.detect(write("w.json", '[{"id": "a", "prompt_len": 1}]')) == "workload-json"
    assert registry.detect(write("r.json", json.dumps({"date": "x", "input_lens": [1]},
                                                      indent=1))) == "vllm-bench"
    assert registry.detect(write("s.jsonl", '{"format": "servescope-steps", "version": 1}\n')) \
        == "servescope-steps"
    log = "INFO start\n" * 5 + "Iteration(3): 1 context requests, 5 context tokens, ...\n"
    assert registry.detect(write("v.log", log)) == "vllm-iteration-log"
    assert registry.detect(write("k.bin", b"\x93\xcb" + bytes(8) + b"\x90\x00")) == \
        "vllm-kv-events"


@pytest.mark.parametrize("content", ["", "hello world\n", "a,b,c\n1,2,3\n", '{"x": 1}\n',
                                     '[1, 2]', b"\x00\x01binary"])
def test_undetectable_files_are_refused(write, content):
    with pytest.raises(TraceFormatError):
        registry.detect(write("x", content))


def test_header_less_step_records_get_a_pointed_message(write):
    with pytest.raises(TraceFormatError, match="header"):
        registry.detect(write("t.jsonl", '{"step": 0, "scheduled": []}\n'))


def test_gzip_is_transparent(tmp_path):
    path = tmp_path / "trace.csv.gz"
    path.write_bytes(gzip.compress(b"Timestamp,Request tokens,Response tokens\n1,5,2\n3,6,0\n"))
    assert registry.detect(path) == "burstgpt"
    specs, report = load(path, "")
    assert [(s.prompt_len, s.arrival_s) for s in specs] == [(5, 0.0)]
    assert report.format == "burstgpt" and report.kind == "requests"


def test_override_wins_and_unknown_names_are_refused(write):
    path = write("m.csv", "arrived_at,num_prefill_tokens,num_decode_tokens\n0,4,2\n")
    report, stream = registry.open_trace(path, "sharegpt-stats", num_requests=3)
    assert len(list(stream)) == 3 and report.format == "sharegpt-stats"
    with pytest.raises(ValueError):
        registry.open_trace(path, "nope")


def test_options_apply_to_requests_only(write):
    path = write("b.csv", "Timestamp,Request tokens,Response tokens\n" +
                 "".join(f"{t},5,2\n" for t in range(10)))
    _, stream = registry.open_trace(path, options=TraceOptions(window_s=(2, 4), limit=2))
    assert [s.arrival_s for s in stream] == [0.0, 1.0]
    steps = write("s.jsonl", '{"format": "servescope-steps", "version": 1}\n')
    with pytest.raises(ValueError):
        registry.open_trace(steps, options=TraceOptions(limit=1))
