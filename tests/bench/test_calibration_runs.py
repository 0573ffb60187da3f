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
