"""`servescope sim` with EAGLE-3 speculation on the lesson workload: it prints the acceptance and
the speed-up against the same run without speculation, through either door (the config file's
speculative_config or --speculative-config, as vLLM spells it), and the speed-up shrinks as
the load rises (a small decode batch is memory-bound: drafts ride on the weight read; a big
one is compute-bound: every draft row costs its share)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from servescope.cli import main
from servescope.sweep import plan as sweep_plan
from servescope.sweep.cost import prices
from servescope.sweep.point import run_point
from servescope.traces.load import read_requests
from servescope.traces.synthetic import lesson
from servescope.traces.upload_options import UploadOptions

CONFIG = {"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100"}
EAGLE3 = {"method": "eagle3", "num_speculative_tokens": 3}
LOW, HIGH = 2.0, 40.0  # requests a second: a few decoding at once; all 60 at once


def workload(tmp_path: Path, rate_per_s: float) -> Path:
    path = tmp_path / f"lesson-{rate_per_s:g}.json"
    path.write_text(json.dumps([{"id": s.id, "arrival_s": s.arrival_s,
                                 "prompt_len": s.prompt_len, "output_len": s.output_len}
                                for s in lesson(0, 60, rate_per_s)]))
    return path


def sim(tmp_path: Path, capsys: pytest.CaptureFixture[str], rate_per_s: float,
        config: dict[str, Any], *flags: str) -> tuple[dict[str, Any], str]:
    config_path = tmp_path / "config.json"
    config_path.write_text(json.dumps(config))
    out = tmp_path / "summary.json"
    assert main(["sim", "--workload", str(workload(tmp_path, rate_per_s)), "--config",
                 str(config_path), "--summary", str(out), *flags]) == 0
    line = next(x for x in capsys.readouterr().err.splitlines()
                if x.startswith("speculative decoding: "))
    return json.loads(out.read_text()), line


@pytest.mark.parametrize("config", [CONFIG, {**CONFIG, "async_scheduling": False}],
                         ids=["default-async", "sync"])
def test_sim_prints_acceptance_and_speedup_and_the_speedup_shrinks_under_load(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], config: dict[str, Any]) -> None:
    low, line = sim(tmp_path, capsys, LOW, config, "--speculative-config", json.dumps(EAGLE3))
    assert "eagle3" in line and "acceptance_rate" in line and "speed-up against K = 0" in line
    assert low["acceptance_source"].startswith("model: eagle3 defaults (")
    # the eagle3 default rate 0.74 a position gives 1 + .74 + .55 + .41 = 2.69 tokens a verify;
    # requests that end mid-verify accept fewer, hence the band
    assert 2.3 < low["mean_acceptance_length"] < 2.9
    assert low["num_accepted_tokens"] == round(low["acceptance_rate"] * low["num_draft_tokens"])
    high, _ = sim(tmp_path, capsys, HIGH, config, "--speculative-config", json.dumps(EAGLE3))
    assert low["speedup"]["mean_itl"] > 1.5  # memory-bound: well over one token a weight read
    assert high["speedup"]["mean_itl"] < low["speedup"]["mean_itl"] - 0.5


def test_the_config_file_and_the_flag_are_one_door(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    by_file, _ = sim(tmp_path, capsys, LOW, {**CONFIG, "speculative_config": EAGLE3})
    by_flag, _ = sim(tmp_path, capsys, LOW, CONFIG, "--speculative-config", json.dumps(EAGLE3))
    assert by_file == by_flag


def test_a_bad_speculative_config_names_the_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config_path = tmp_path / "config.json"
    config_path.write_text(json.dumps(CONFIG))
    args = ["sim", "--workload", str(workload(tmp_path, LOW)), "--config", str(config_path)]
    assert main([*args, "--speculative-config", '{"method": "eagle3"}']) != 0
    assert "speculative_config.num_speculative_tokens" in capsys.readouterr().err
    assert main([*args, "--speculative-config", "{eagle"]) != 0
    assert "--speculative-config: not JSON" in capsys.readouterr().err


def test_a_sweep_point_resolves_and_runs_the_same_speculative_config(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """core/resolve.py is the one resolution: `sim` and a sweep point (as its Ray task runs
    it) give the same acceptance and the same summary."""
    given = {**CONFIG, "speculative_config": EAGLE3}
    by_sim, _ = sim(tmp_path, capsys, LOW, given)
    plan = sweep_plan.make_plan(given, {"gpu": ["H100"]}, {})
    specs = read_requests(workload(tmp_path, LOW), UploadOptions())[1]
    report = run_point(plan.points[0], specs, {}, prices())
    assert report["config"]["speculative_config"] == EAGLE3
    assert {k: v for k, v in by_sim.items() if k != "speedup"} == report["summary"]


def test_with_data_parallel_ranks_the_line_sums_the_ranks(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """data_parallel_size 2: acceptance over both ranks' verifies, the speed-up against the
    same two ranks without speculation (core/replicas.py)."""
    config = {**CONFIG, "data_parallel_size": 2, "speculative_config": EAGLE3}
    two, line = sim(tmp_path, capsys, LOW, config)
    one, _ = sim(tmp_path, capsys, LOW, {**CONFIG, "speculative_config": EAGLE3})
    assert "n/a" not in line and two["data_parallel_size"] == 2
    assert two["num_drafts"] > 0.8 * one["num_drafts"]  # every rank's verifies counted
    assert two["speedup"]["mean_itl"] > 1.5  # fewer decodes a rank: still memory-bound
    two, _ = sim(tmp_path, capsys, HIGH, config)
    one, _ = sim(tmp_path, capsys, HIGH, {**CONFIG, "speculative_config": EAGLE3})
    # all 60 at once: two ranks without speculation finish sooner than one would
    assert (two["speedup"]["baseline_output_throughput"]
            > 1.3 * one["speedup"]["baseline_output_throughput"])
