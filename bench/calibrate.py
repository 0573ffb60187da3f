"""Fit one GPU's efficiency constants to the "fit" cases of bench/calibration_cases.py.

Procedure (run once; its output is pasted into backend/servescope/data/calibration.json):
minimise the sum over fit cases of log(predicted / published)^2 by Nelder-Mead over four
parameters, bandwidth and compute efficiency (kept in (0, 1) by a logistic map) and the per-step
and per-request overheads (kept positive by an exponential map), starting from 0.7, 0.5, 1 ms,
0.02 ms. Held-out cases are never evaluated here. Usage: python bench/calibrate.py [--gpu H100]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from calibration_cases import available_cases  # noqa: E402

from servescope.core.catalog import Calibration  # noqa: E402

START = (0.7, 0.5, 1.0, 0.02)


def to_calibration(x: np.ndarray, gpu: str) -> Calibration:
    def logistic(v: float) -> float:
        return 1.0 / (1.0 + math.exp(-v))
    return Calibration(gpu=gpu, fitted_on=gpu, bandwidth_efficiency=logistic(x[0]),
                       compute_efficiency=logistic(x[1]), step_overhead_ms=math.exp(x[2]),
                       per_request_overhead_ms=math.exp(x[3]))


def from_values(values: tuple[float, float, float, float]) -> np.ndarray:
    bw, compute, step, request = values
    return np.array([math.log(bw / (1 - bw)), math.log(compute / (1 - compute)),
                     math.log(step), math.log(request)])


def nelder_mead(f, x0: np.ndarray, step: float = 0.5, iters: int = 160) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Plain Nelder-Mead (reflection 1, expansion 2, contraction and shrink 0.5)."""
    simplex = [x0] + [x0 + step * np.eye(len(x0))[i] for i in range(len(x0))]
    values = [f(x) for x in simplex]
    for _ in range(iters):
        order = np.argsort(values)
        simplex = [simplex[i] for i in order]
        values = [values[i] for i in order]
        centroid = np.mean(simplex[:-1], axis=0)
        reflected = centroid + (centroid - simplex[-1])
        fr = f(reflected)
        if fr < values[0]:
            expanded = centroid + 2 * (centroid - simplex[-1])
            fe = f(expanded)
            simplex[-1], values[-1] = (expanded, fe) if fe < fr else (reflected, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = reflected, fr
        else:
            contracted = centroid + 0.5 * (simplex[-1] - centroid)
            fc = f(contracted)
            if fc < values[-1]:
                simplex[-1], values[-1] = contracted, fc
            else:
                simplex = [simplex[0] + 0.5 * (x - simplex[0]) for x in simplex]
                values = [f(x) for x in simplex]
    return simplex[int(np.argmin(values))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", default="H100")
    parser.add_argument("--iters", type=int, default=160)
    args = parser.parse_args()
    cases = [c for c in available_cases("fit") if c.gpu == args.gpu]
    if not cases:
        print(f"no fit cases for {args.gpu}", file=sys.stderr)
        return 1

    def loss(x: np.ndarray) -> float:
        calibration = to_calibration(x, args.gpu)
        return sum(math.log(c.predict(calibration) / c.published) ** 2 for c in cases)

    best = nelder_mead(loss, from_values(START), iters=args.iters)
    calibration = to_calibration(best, args.gpu)
    result = {
        "bandwidth_efficiency": round(calibration.bandwidth_efficiency, 4),
        "compute_efficiency": round(calibration.compute_efficiency, 4),
        "step_overhead_ms": round(calibration.step_overhead_ms, 4),
        "per_request_overhead_ms": round(calibration.per_request_overhead_ms, 5),
        "fit_cases": [c.name for c in cases],
        "fit_rms_log_error": round(math.sqrt(loss(best) / len(cases)), 4),
    }
    print(json.dumps({args.gpu: result}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
