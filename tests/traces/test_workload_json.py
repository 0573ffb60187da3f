import json

import pytest
from support.paths import shared_path
from support.trace_load import load

from servescope.traces.errors import TraceFormatError


def test_shared_reference_workload_with_system_prompt():
    path = shared_path("vllm-reference", "p1_sysprompt_ample.workload.json")
    rows = json.loads(path.read_text())
    specs, _ = load(path, "workload-json")
    assert len(specs) == len(rows)
    for spec, row in zip(specs, rows, strict=True):
        assert spec.prefix == ((row["shared_prefix"]["id"], row["shared_prefix"]["len"]),)
        assert (spec.arrival_step, spec.prompt_len, spec.output_len) == (
            row["arrival_step"], row["prompt_len"], row["output_len"])


def test_arrival_seconds_and_priority(write):
    path = write("w.json", '[{"id": "a", "arrival_s": 0.5, "prompt_len": 4, "output_len": 2, '
                 '"priority": 3}]')
    (spec,), _ = load(path, "workload-json")
    assert (spec.arrival_s, spec.arrival_step, spec.priority, spec.prefix) == (0.5, None, 3, ())


def test_a_recording_headers_prefix_segments(write):
    path = write("w.json", '[{"id": "a", "arrival_step": 2, "prompt_len": 40, "output_len": 2, '
                 '"prefix": [["sys", 16], ["doc", 8]]}]')
    (spec,), _ = load(path, "workload-json")
    assert spec.prefix == (("sys", 16), ("doc", 8))


@pytest.mark.parametrize("bad, field", [
    ('{"id": "b", "arrival_step": 0, "prompt_len": 4, "output_len": 2, "prefix": [["k"]]}',
     "prefix"),
    ('{"id": "b", "arrival_step": 0, "prompt_len": -4, "output_len": 2}', "prompt_len"),
    ('{"id": "b", "prompt_len": 4, "output_len": 2}', "arrival_s"),
    ('{"id": "b", "arrival_s": -1, "prompt_len": 4, "output_len": 2}', "arrival_s"),
    ('{"id": "a", "arrival_step": 0, "prompt_len": 4, "output_len": 2}', "id"),
    ('{"id": "b", "arrival_step": 0, "prompt_len": 4, "output_len": 2, '
     '"shared_prefix": {"id": "s"}}', "len"),
    ('"b"', ""),
])
def test_errors_name_the_line_the_request_starts_on(write, bad, field):
    text = '[\n {"id": "a", "arrival_step": 0, "prompt_len": 4, "output_len": 2},\n\n ' + bad \
        + "\n]"
    with pytest.raises(TraceFormatError) as info:
        load(write("w.json", text), "workload-json")
    assert (info.value.line, info.value.field) == (4, field)


def test_workload_spec_accepted(write):
    path = write("w.json", '[{"id": "a", "arrival_step": 0, "prompt_len": 4, "output_len": 9, '
                 '"spec_accepted": [2, 0, 3]}, '
                 '{"id": "b", "arrival_step": 0, "prompt_len": 4, "output_len": 2}]')
    (a, b), _ = load(path, "workload-json")
    assert (a.spec_accepted, b.spec_accepted) == ((2, 0, 3), None)


@pytest.mark.parametrize("value", ['"x"', '[1, -1]', '[true]', '[1.5]'])
def test_workload_bad_spec_accepted_names_it(write, value):
    path = write("w.json", '[{"id": "a", "arrival_step": 0, "prompt_len": 4, "output_len": 2, '
                 f'"spec_accepted": {value}}}]')
    with pytest.raises(TraceFormatError) as err:
        load(path, "workload-json")
    assert "spec_accepted" in str(err.value)
