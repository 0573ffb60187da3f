"""How a sweep scales with Ray workers on this machine, and what a real grid costs in time.

1. Points per minute with 1 and then 2 Ray workers (Ray in-process with num_cpus=1, then 2),
   over the same grid and the same slice of the trace; the speed-up is the ratio of the two,
   measured in this run.
2. The wall time of the 16-point grid of issue 16 (2 GPUs x 2 max_num_seqs x 2 token budgets x
   2 TP of Llama 3.1 8B) over the whole trace with 2 workers.

Usage: python bench/sweep_scale.py [--trace ../shared/traces/AzureLLMInferenceTrace_code.csv]
       [--window-end-s 600] [--skip-grid16]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

from servescope.core.config import EngineConfig
from servescope.sweep import plan as sweep_plan
from servescope.traces.load import read_requests
from servescope.traces.upload_options import UploadOptions

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT.parent / "shared" / "traces" / "AzureLLMInferenceTrace_code.csv"
BASE = EngineConfig(model="meta-llama/Llama-3.1-8B-Instruct", gpu="H100")
SLOS = {"p99_ttft_ms": 2000.0, "p99_itl_ms": 100.0}
SCALE_GRID = {"max_num_seqs": [32, 64, 128, 256], "max_num_batched_tokens": [2048, 8192]}
GRID16 = {"gpu": ["H100", "A100-80GB"], "max_num_seqs": [64, 256],
          "max_num_batched_tokens": [2048, 8192], "tensor_parallel_size": [1, 2]}


def timed_sweep(grid: dict[str, Any], specs: list[Any], workers: int) -> tuple[float, dict]:
    plan = sweep_plan.make_plan(BASE, grid, SLOS)
    start = time.perf_counter()
    result = sweep_plan.execute(plan, specs, num_cpus=workers)
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, default=TRACE)
    parser.add_argument("--window-end-s", type=float, default=600.0,
                        help="the slice of the trace the scaling part sweeps (seconds)")
    parser.add_argument("--skip-grid16", action="store_true")
    args = parser.parse_args()

    window = read_requests(args.trace, UploadOptions(window_end_s=args.window_end_s))[1]
    points = len(sweep_plan.make_plan(BASE, SCALE_GRID, SLOS).points)
    print(f"scaling: {points} points over the first {args.window_end_s:g} s of {args.trace.name} "
          f"({len(window):,} requests); Ray in-process; times include starting Ray")
    rates = {}
    for workers in (1, 2):
        seconds, _ = timed_sweep(SCALE_GRID, window, workers)
        rates[workers] = points / seconds * 60
        print(f"  {workers} worker{'s' if workers > 1 else ' '}: {seconds:7.1f} s  "
              f"{rates[workers]:6.2f} points/min")
    print(f"  speed-up with 2 workers: {rates[2] / rates[1]:.2f}x (ideal 2.00x on {os.cpu_count()} "
          f"CPUs; load average now {os.getloadavg()[0]:.1f}: other work shares the cores)")
    if args.skip_grid16:
        return
    whole = read_requests(args.trace, UploadOptions())[1]
    seconds, result = timed_sweep(GRID16, whole, 2)
    ran = sum(p["status"] == "ok" for p in result["points"])
    print(f"16-point grid (2 GPUs x 2 max_num_seqs x 2 budgets x 2 TP, Llama 3.1 8B) over all "
          f"{len(whole):,} requests with 2 workers: {seconds:.1f} s ({ran} ran, "
          f"{16 / seconds * 60:.2f} points/min); Pareto set {result['pareto']}")
    print(f"  {result['answer']}")


if __name__ == "__main__":
    main()
