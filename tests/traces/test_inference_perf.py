"""inference-perf configs as its own models and generators read them: the example shapes load,
aliases and defaults, prompts built once and cycled, multi-turn, stages and interval, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from support import inference_perf_examples as examples
from support.trace_load import load

from servescope.traces import registry
from servescope.traces.errors import TraceFormatError


def _load(write, text, **params):
    return load(write("config.yml", text), "inference-perf", **params)


@pytest.mark.parametrize("name", ["SHARED_PREFIX", "SHARED_PREFIX_DISTRIBUTIONS",
                                  "SHARED_PREFIX_MULTI_TURN", "RANDOM", "SYNTHETIC"])
def test_every_example_shape_loads_and_is_detected(write, name):
    text = getattr(examples, name)
    specs, _ = _load(write, text)
    assert specs and registry.detect(write("c.yml", text)) == "inference-perf"


def test_the_aliases_and_interval_of_config_shared_prefix(write):
    specs, report = _load(write, examples.SHARED_PREFIX)
    assert len(specs) == 1 * 30 + 2 * 30
    assert {(s.prompt_len, s.output_len) for s in specs} == {(150, 50)}
    assert len({s.prefix[0] for s in specs}) == 10  # num_unique_system_prompts
    arrivals = [s.arrival_s for s in specs]
    # ConstantLoadTimer: the stage's last send lands exactly at its duration; the next stage's
    # clock starts interval (15 s) + the loadgen's 1 s lead after it
    assert arrivals[29] == pytest.approx(30.0)
    assert arrivals[30] > 30.0 + 15 + 1 and arrivals[-1] == pytest.approx(30.0 + 16 + 30)
    assert any("15 s + 1 s" in n for n in report.notes)


def test_prompts_are_built_once_and_cycled(write):
    """SharedPrefixDataGenerator.load_lazy_data: request i sends prompts[i % P], P built once
    (num_groups x num_prompts_per_group) and shuffled, never drawn with replacement."""
    text = examples.SHARED_PREFIX.replace("num_unique_system_prompts: 10",
                                          "num_unique_system_prompts: 2").replace(
        "num_users_per_system_prompt: 10", "num_users_per_system_prompt: 2")
    specs, _ = _load(write, text)
    first = [s.prefix for s in specs[:4]]
    assert len(set(first)) == 4  # every prompt once before any repeats
    assert all(specs[i].prefix == specs[i % 4].prefix for i in range(30))
    assert {p[0] for p in first} == {("ip-system-0", 100), ("ip-system-1", 100)}


def test_each_stage_restarts_the_prompt_numbering(write):
    """run_stage calls datagen.get_data() afresh: stage 2's request 0 is prompts[0] again."""
    specs, _ = _load(write, examples.SHARED_PREFIX)
    assert specs[30].prefix == specs[0].prefix and specs[31].prefix == specs[1].prefix


def test_pydantic_defaults_fill_what_is_left_out(write):
    """SharedPrefix defaults 10 x 10 prompts of 100 + 50 tokens, 50 out; load.type constant."""
    text = "load:\n  stages:\n  - {rate: 2, duration: 60}\ndata:\n  type: shared_prefix\n" \
           "  shared_prefix: {}\n"
    specs, _ = _load(write, text)
    assert len(specs) == 120 and {(s.prompt_len, s.output_len) for s in specs} == {(150, 50)}
    assert len({s.prefix for s in specs}) == 100


def test_typed_distributions_are_drawn_inside_their_bounds(write):
    specs, _ = _load(write, examples.SHARED_PREFIX_DISTRIBUTIONS)
    questions = np.array([s.prefix[1][1] for s in specs])
    outputs = np.array([s.output_len for s in specs])
    assert questions.min() >= 10 and questions.max() <= 2000 and outputs.max() <= 4096
    assert questions.mean() > 200  # a right-skewed normal (skew 2.5) sits above its mean
    again, _ = _load(write, examples.SHARED_PREFIX_DISTRIBUTIONS)
    assert [s.prefix for s in again] == [s.prefix for s in specs]  # shared_prefix.seed


def test_multi_turn_rounds_resend_the_whole_conversation(write):
    """LocalUserSession: context starts as the system prompt; a round sends context + the
    user's prompt (system + question), then context = that prompt + its answer. Request i is
    user i % 20, round i // 20."""
    specs, _ = _load(write, examples.SHARED_PREFIX_MULTI_TURN)
    assert len(specs) == 100
    assert specs[0].prompt_len == 100 + (100 + 50)
    assert specs[20].prompt_len == 250 + 50 + 150 and specs[40].prompt_len == 450 + 50 + 150
    sent, answered = specs[0].prefix, specs[20].prefix
    assert answered[:len(sent)] == sent and answered[len(sent)][1] == 50  # then the answer
    assert specs[1].prefix[:2] != specs[0].prefix[:2] or specs[1].prefix[2] != sent[2]


def test_random_without_total_count_says_so(write):
    specs, report = _load(write, examples.RANDOM)
    assert len(specs) == 30 and all(10 <= s.prompt_len <= 100 for s in specs)
    assert any("total_count" in n for n in report.notes)


def test_a_total_count_shorter_than_a_stage_is_refused(write):
    text = examples.RANDOM.replace("  input_distribution:\n", "  input_distribution:\n"
                                   "    total_count: 5\n")
    with pytest.raises(TraceFormatError) as err:
        _load(write, text)
    assert err.value.field == "data.input_distribution.total_count"


def test_the_kubecon_sweep_needs_the_saturation_rate_and_then_spaces_its_stages(write):
    with pytest.raises(TraceFormatError) as err:
        _load(write, examples.KUBECON)
    assert err.value.field == "load.sweep" and "rate_per_s" in str(err.value)
    specs, _ = _load(write, examples.KUBECON, saturation_rate_per_s=20.0)
    # LoadGenerator.preprocess, linear: rates linspace(1, 20, 7) rounded to 0.01, 60 s each
    rates = [1.0, 4.17, 7.33, 10.5, 13.67, 16.83, 20.0]
    assert len(specs) == sum(int(r * 60) for r in rates)
    assert {(s.prompt_len, s.output_len) for s in specs} == {(192, 64)}


def test_variance_needs_std_dev_zero_as_inference_perf_validates_it(write):
    """Distribution.validate_distribution: variance with std_dev > 0 (its default is 200) is
    refused; with std_dev 0, std_dev = sqrt(variance)."""
    base = examples.RANDOM.replace("std_dev: 10", "std_dev: 0\n    variance: 400", 1)
    specs, _ = _load(write, base)
    assert len({s.prompt_len for s in specs}) > 5  # std 20, not 0
    with pytest.raises(TraceFormatError) as err:
        _load(write, examples.RANDOM.replace("std_dev: 10", "variance: 400", 1))
    assert err.value.field == "data.input_distribution.variance"


@pytest.mark.parametrize(("change", "field"), [
    (("type: shared_prefix", "type: shareGPT"), "data.type"),
    (("type: constant", "type: concurrent"), "load.type"),
    (("type: constant", "type: steady"), "load.type"),
    (("duration: 30", "duration: 0.5"), "load.stages[0].duration"),
    (("rate: 2", "rate: -1"), "load.stages[1].rate"),
    (("question_len: 50", "question_length: 50"), "data.shared_prefix.question_length"),
    (("num_users_per_system_prompt: 10", "num_users_per_system_prompt: 10\n"
      "    num_prompts_per_group: 3"), "data.shared_prefix.num_users_per_system_prompt"),
])
def test_bad_configs_name_the_field_without_echoing_values(write, change, field):
    with pytest.raises(TraceFormatError) as err:
        _load(write, examples.SHARED_PREFIX.replace(*change))
    assert err.value.field == field
    assert "steady" not in str(err.value) and "0.5" not in err.value.message


def test_broken_yaml_names_the_line(write):
    with pytest.raises(TraceFormatError) as err:
        _load(write, examples.SHARED_PREFIX.replace("  - rate: 2", "  - rate: [2"))
    assert err.value.line >= 6


def test_the_lifecycle_report_beside_the_config_is_the_measured_result(write, tmp_path):
    seconds = {"mean": 2.0, "median": 1.9, "p90": 2.5, "p99": 3.0}
    report_json = {"successes": {"count": 40, "latency": {
        "request_latency": seconds, "time_to_first_token": {"mean": 0.05, "p90": 0.07},
        "inter_token_latency": {"mean": 0.004}}}, "failures": {"count": 1}}
    (tmp_path / "summary_lifecycle_metrics.json").write_text(json.dumps(report_json))
    _, report = _load(write, examples.SHARED_PREFIX)
    measured = report.meta["measured_summary"]
    assert measured["completed"] == 40 and measured["failed"] == 1
    assert measured["mean_e2el_ms"] == pytest.approx(2000.0)
    assert measured["p90_ttft_ms"] == pytest.approx(70.0)
    assert measured["mean_itl_ms"] == pytest.approx(4.0)


def test_upload_options_carry_the_saturation_rate_and_the_seed(write):
    from servescope.traces.load import read_requests
    from servescope.traces.upload_options import UploadOptions

    path = write("kubecon.yaml", examples.KUBECON)
    options = UploadOptions.from_fields({"rate_per_s": "5", "seed": "3"}, 10**6)
    _, specs, _ = read_requests(path, options)
    rates = [1.0, 1.67, 2.33, 3.0, 3.67, 4.33, 5.0]  # linspace(1, 5, 7), 60 s each
    assert len(specs) == sum(int(r * 60) for r in rates)
    _, again, _ = read_requests(path, options)
    _, other, _ = read_requests(path, UploadOptions.from_fields({"rate_per_s": "5"}, 10**6))
    assert [s.arrival_s for s in again] == [s.arrival_s for s in specs]
    assert [s.arrival_s for s in other] != [s.arrival_s for s in specs]
