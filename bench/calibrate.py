"""Fit the cost model's per-GPU constants on the "fit" runs of bench/calibration_runs.py (real
vLLM runs from ../shared/measured/calibration.json); held-out runs are never simulated here.

Loss: the sum over fit runs of |log(simulated / measured)| for mean E2E, mean TTFT and mean ITL
(absolute, not squared: the targets are median errors, and one odd run must not pull the rest).
Nelder-Mead over the bandwidth efficiency of weight reads and of attention's paged KV reads and
the compute efficiency (logistic map to (0, 1)) and the per-step and per-request overheads
(exponential map to > 0), from (0.8, 0.7, 0.6 ms, 0.02 ms, 0.55); the API server's
per-request time only shifts TTFT and E2E, so for each candidate it is the best value on a grid
(it does not change what the engine does). `--group workstation` fits only the two efficiencies
of the GDDR / PCIe GPUs, keeping the H100 group's overheads. Output: JSON for
backend/servescope/data/calibration.json. Usage: python bench/calibrate.py [--group H100]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from calibration_runs import Run, load_runs, simulate  # noqa: E402

from servescope.core import catalog  # noqa: E402
from servescope.core.catalog import Calibration  # noqa: E402

START = [0.8, 0.7, 0.6, 0.02, 0.55]  # from a coarse probe of the weights / KV split
GROUPS = {"H100": ("H100",), "workstation": ("RTX PRO 6000",)}
FRONTEND_GRID = np.arange(0.0, 40.01, 0.5)
FIT_STAGE_CAP_S = 15.0  # steady state comes within seconds at these loads
FIT_STAGE_MAX_S = 60.0  # and a long-output run is near it within a minute of arrivals
CAPS = [FIT_STAGE_CAP_S, FIT_STAGE_MAX_S]


def logistic(v: float) -> float:
    return 1.0 / (1.0 + math.exp(-v))


def logit(p: float) -> float:
    return math.log(p / (1 - p))


def nelder_mead(f, x0: np.ndarray, step: float = 0.3, iters: int = 160) -> np.ndarray:  # type: ignore[no-untyped-def]
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


def candidate(gpu_key: str, x: np.ndarray, base: Calibration | None) -> Calibration:
    own = catalog.calibration(gpu_key)
    values = {"bandwidth_efficiency": logistic(x[0]), "compute_efficiency": logistic(x[1])}
    if base is None:
        values |= {"step_overhead_ms": math.exp(x[2]), "per_request_overhead_ms": math.exp(x[3]),
                   "kv_bandwidth_efficiency": logistic(x[4])}
    else:
        values |= {"step_overhead_ms": base.step_overhead_ms,
                   "per_request_overhead_ms": base.per_request_overhead_ms,
                   "kv_bandwidth_efficiency": base.kv_bandwidth_efficiency}
    return dataclasses.replace(own, frontend_ms=0.0, **values)


def loss_terms(run: Run, simulated: dict[str, float], frontend: float) -> list[float]:
    shift = 0.0 if "frontend_overhead_ms" in run.config else frontend
    terms = [math.log((simulated["e2e_mean"] + shift) / run.measured["e2e_mean"]),
             math.log((simulated["ttft_mean"] + shift) / run.measured["ttft_mean"]),
             math.log(simulated["itl_mean"] / run.measured["itl_mean"])]
    return [abs(t) for t in terms]


def fit(runs: list[Run], base: Calibration | None, iters: int) -> tuple[Calibration, float]:
    gpu_key = catalog.gpu(runs[0].gpu).key
    best: dict[str, float] = {}

    def loss(x: np.ndarray) -> float:
        calibration = candidate(gpu_key, x, base)
        sims = [simulate(r, calibration, CAPS[0], CAPS[1]) for r in runs]
        grid = FRONTEND_GRID if base is None else [base.frontend_ms]
        totals = [sum(sum(loss_terms(r, s, f)) for r, s in zip(runs, sims, strict=True))
                  for f in grid]
        i = int(np.argmin(totals))
        if totals[i] < best.get("loss", math.inf):
            best.update(loss=totals[i], frontend=float(grid[i]))
            print(f"  loss {totals[i]:.4f} {calibration} frontend {grid[i]}", file=sys.stderr)
        print(f"  eval, loss {totals[i]:.4f}", file=sys.stderr, flush=True)
        return float(totals[i])

    start = [logit(START[0]), logit(START[1])]
    if base is None:
        start += [math.log(START[2]), math.log(START[3]), logit(START[4])]
    x = nelder_mead(loss, np.array(start), iters=iters)
    loss(x)
    result = dataclasses.replace(candidate(gpu_key, x, base), frontend_ms=best["frontend"])
    return result, best["loss"] / (3 * len(runs))



def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--group", default="H100", choices=sorted(GROUPS))
    parser.add_argument("--iters", type=int, default=40)
    parser.add_argument("--start", help="comma-separated start: bandwidth, compute, step ms, "
                        "request ms, KV bandwidth (default: START)")
    parser.add_argument("--stage-cap", type=float, default=FIT_STAGE_CAP_S)
    parser.add_argument("--stage-max", type=float, default=FIT_STAGE_MAX_S)
    args = parser.parse_args()
    CAPS[:] = [args.stage_cap, args.stage_max]
    if args.start:
        START[:] = [float(v) for v in args.start.split(",")]
    runs = [r for r in load_runs() if r.role == "fit" and r.gpu in GROUPS[args.group]]
    if not runs:
        print(f"no fit runs for {args.group}", file=sys.stderr)
        return 1
    base = None if args.group == "H100" else catalog.calibration("H100")
    calibration, rms = fit(runs, base, args.iters)
    result = {k: round(v, 5) for k, v in dataclasses.asdict(calibration).items()
              if k in ("bandwidth_efficiency", "kv_bandwidth_efficiency", "compute_efficiency",
                       "step_overhead_ms", "per_request_overhead_ms", "frontend_ms")}
    result |= {"fit_runs": [r.id for r in runs], "fit_mean_abs_log_error": round(rms, 4)}
    print(json.dumps({args.group: result}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
