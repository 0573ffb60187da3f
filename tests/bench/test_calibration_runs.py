"""A bounded fidelity check on real vLLM runs (../shared/measured/calibration.json): three small
runs of the fit split re-simulated with the shipped constants come within a bound of what was
measured. The bounds are looser than bench/fidelity.py's medians so that only a real regression
(a broken cost model, a lost term, a wrong workload) fails it."""

from __future__ import annotations

import sys

import numpy as np
from support.paths import REPO, shared_path

RUNS = ("blis-train-20260217-155451-llama-2-7b-tp1-codegen-h100",
        "blis-train-64-qwen2-5-7b-instruct-tp1-roleplay-1-1-h100",
        "blis-train-62-mistral-nemo-12b-tp2-general-lite-2-1-h100")
BOUNDS = {"e2e_mean": 15.0, "itl_mean": 15.0, "ttft_mean": 30.0}  # median |error|, percent


def test_the_fit_runs_come_within_the_bound() -> None:
    shared_path("measured", "calibration.json")
    sys.path.insert(0, str(REPO / "bench"))
    from calibration_runs import load_runs, simulate

    runs = {r.id: r for r in load_runs()}
    errors: dict[str, list[float]] = {m: [] for m in BOUNDS}
    for run_id in RUNS:
        run = runs[run_id]
        assert run.role == "fit"
        simulated = simulate(run, None, stage_cap_s=15.0, stage_max_s=30.0)
        for metric in BOUNDS:
            errors[metric].append(abs(simulated[metric] / run.measured[metric] - 1.0) * 100)
    for metric, bound in BOUNDS.items():
        assert np.median(errors[metric]) <= bound, (metric, errors[metric])


def test_the_split_is_fixed_and_covers_every_group() -> None:
    shared_path("measured", "calibration.json")
    sys.path.insert(0, str(REPO / "bench"))
    from calibration_runs import load_runs

    runs = load_runs()
    assert len(runs) == 29
    held_out = {r.group for r in runs if r.role == "held-out"}
    assert {"blis-train", "feb-other", "llmservingsim_bench_validation"} <= held_out
    assert all(r.why_skipped for r in runs if r.role == "skipped")
    assert sum(r.role == "fit" for r in runs) >= 12


def _profile(duration: int) -> dict:
    return {"load": {"type": "constant", "stages": [{"rate": 2, "duration": duration},
                                                    {"rate": 4, "duration": duration}]},
            "data": {"type": "shared_prefix", "shared_prefix": {
                "num_groups": 2, "num_prompts_per_group": 2, "system_prompt_len": 32,
                "question_len": 64, "output_len": 8}}}


def test_a_cut_stage_is_preceded_by_the_prompt_pools_first_pass_unmeasured() -> None:
    """inference-perf sends request i of a stage prompt i mod P (SharedPrefixDataGenerator.
    load_lazy_data: data_index % len(prompts)), so over a 600 s stage all but the first pass
    find their prompt cached. A 5 s cut of a 30 s stage at 2 req/s with a pool of 4 is led by
    ceil(4 / 2) = 2 s whose 4 requests (the pool's first pass) are simulated, not measured."""
    sys.path.insert(0, str(REPO / "bench"))
    from calibration_runs import WARMUP, _capped

    specs = _capped(_profile(30), 5.0, lambda s: s)
    warm = [s for s in specs if s.id.startswith(WARMUP)]
    assert [s.id for s in warm] == [WARMUP + f"ip{i}" for i in range(4)]
    assert len(specs) == 2 * 7 + 4 * 5  # stage 1: 5 s + the 2 s lead; stage 2: 5 s
    assert {s.prefix for s in specs} == {s.prefix for s in warm}  # every prompt was sent before
    assert max(s.arrival_s for s in warm) < min(s.arrival_s for s in specs[4:])


def test_an_uncut_or_barely_cut_stage_is_simulated_whole_and_all_measured() -> None:
    sys.path.insert(0, str(REPO / "bench"))
    from calibration_runs import WARMUP, _capped

    for duration, cap in ((6, 5.5), (6, float("inf"))):  # 6 s (whole seconds), or cap + lead > 6
        specs = _capped(_profile(duration), cap, lambda s: s)
        assert len(specs) == 2 * 6 + 4 * 6
        assert not any(s.id.startswith(WARMUP) for s in specs)
