"""inference-perf configs: load stages, shared_prefix and distribution data, reports, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from support.trace_load import load

from servescope.traces import registry
from servescope.traces.errors import TraceFormatError

SHARED = """\
load:
  type: constant
  stages:
  - rate: 4
    duration: 5
  - rate: 10
    duration: 2
api:
  type: completion
  streaming: true
data:
  type: shared_prefix
  shared_prefix:
    num_groups: 3
    num_prompts_per_group: 2
    system_prompt_len: 100
    question_len: 40
    output_len: 25
"""


def test_constant_stages_follow_each_other_at_their_rates(write):
    specs, report = load(write("p.yaml", SHARED), "inference-perf")
    arrivals = np.array([s.arrival_s for s in specs])
    assert len(specs) == 4 * 5 + 10 * 2 == report.num_yielded
    assert np.allclose(np.diff(arrivals[:20]), 0.25)
    assert arrivals[20] == 5.0 and np.allclose(np.diff(arrivals[20:]), 0.1)


def test_shared_prefix_prompts_share_their_group_and_repeat_whole(write):
    specs, _ = load(write("p.yaml", SHARED), "inference-perf")
    assert {(s.prompt_len, s.output_len) for s in specs} == {(140, 25)}
    systems = {s.prefix[0] for s in specs}
    questions = {s.prefix[1] for s in specs}
    assert {n for _, n in systems} == {100} and len(systems) <= 3
    assert len(questions) <= 3 * 2 < len(specs)  # 6 prompts reused by 40 requests
    for s in specs:  # a question belongs to its own group's system prompt
        assert s.prefix[1][0].startswith(s.prefix[0][0].replace("system", "question"))


def test_poisson_arrivals_stay_in_their_stage_and_the_seed_decides(write):
    text = SHARED.replace("type: constant", "type: poisson")
    path = write("p.yaml", text)
    first, _ = load(path, "inference-perf", seed=3)
    again, _ = load(path, "inference-perf", seed=3)
    other, _ = load(path, "inference-perf", seed=4)
    assert [s.arrival_s for s in first] == [s.arrival_s for s in again]
    assert [s.arrival_s for s in first] != [s.arrival_s for s in other]
    assert all(0 <= s.arrival_s < 7 for s in first)
    assert 15 <= len(first) <= 60


def test_random_data_draws_lengths_inside_min_and_max(write):
    text = SHARED.split("data:")[0] + """data:
  type: random
  input_distribution: {min: 10, max: 50, mean: 30, std_dev: 20}
  output_distribution: {min: 5, max: 9, mean: 7, std_dev: 3}
"""
    specs, _ = load(write("p.yaml", text), "inference-perf")
    assert all(10 <= s.prompt_len <= 50 and 5 <= s.output_len <= 9 for s in specs)
    assert len({s.prompt_len for s in specs}) > 3


@pytest.mark.parametrize(("change", "field", "words"), [
    (("type: shared_prefix", "type: shareGPT"), "data.type", "'shareGPT'"),
    (("type: constant", "type: concurrent"), "load.type", "'concurrent'"),
    (("    question_len: 40\n", ""), "data.shared_prefix.question_len", "positive integer"),
    (("rate: 10", "rate: -1"), "load.stages[1].rate", "positive"),
])
def test_bad_configs_name_the_field(write, change, field, words):
    with pytest.raises(TraceFormatError) as err:
        load(write("p.yaml", SHARED.replace(*change)), "inference-perf")
    assert err.value.field == field and words in str(err.value)


def test_broken_yaml_names_the_line(write):
    with pytest.raises(TraceFormatError) as err:
        load(write("p.yaml", SHARED.replace("  - rate: 10", "  - rate: [10")), "inference-perf")
    assert err.value.line >= 6


def test_a_yaml_profile_is_detected(write):
    assert registry.detect(write("p.yaml", SHARED)) == "inference-perf"


def test_the_lifecycle_report_beside_the_config_is_the_measured_result(write, tmp_path):
    seconds = {"mean": 2.0, "median": 1.9, "p90": 2.5, "p99": 3.0}
    report_json = {"successes": {"count": 40, "latency": {
        "request_latency": seconds, "time_to_first_token": {"mean": 0.05, "p90": 0.07},
        "inter_token_latency": {"mean": 0.004}}}, "failures": {"count": 1}}
    (tmp_path / "summary_lifecycle_metrics.json").write_text(json.dumps(report_json))
    _, report = load(write("config.yaml", SHARED), "inference-perf")
    measured = report.meta["measured_summary"]
    assert measured["completed"] == 40 and measured["failed"] == 1
    assert measured["mean_e2el_ms"] == pytest.approx(2000.0)
    assert measured["p90_e2el_ms"] == pytest.approx(2500.0)
    assert measured["p90_ttft_ms"] == pytest.approx(70.0)
    assert measured["mean_itl_ms"] == pytest.approx(4.0)


def test_a_report_that_is_not_inference_perf_is_refused(write, tmp_path):
    bad = write("r.json", json.dumps({"completed": 3}))
    with pytest.raises(TraceFormatError) as err:
        load(write("config.yaml", SHARED), "inference-perf", measured_report=bad)
    assert err.value.field == "successes.latency"
