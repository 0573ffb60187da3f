"""Production traces at production size: the Azure 2023 conversation trace and a generated
1M-request Azure-format file simulated end to end (read, simulate, summary) on Llama 3.1 8B /
H100 with vLLM's defaults. Prints wall and CPU time, requests per CPU second, fast-forward's
speed-up (CPU time) over the step-by-step path on the same trace in this run (whose summary must
be the same), and the generated file's wall time and peak RSS (simulated in a child process of
its own, so its peak is its own). Targets (issue 15): the conversation trace in <= 3 s, the 1M
file in <= 3 min under 1.5 GiB.
Usage: python bench/trace_scale.py [--trace FILE] [--rows N] [--skip-step-path] [--keep DIR]"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.scenarios.diagnosis_check import prepare
from servescope.traces.load import read_requests

HERE = Path(__file__).resolve().parent
CONV = HERE.parent / "../shared/traces/AzureLLMInferenceTrace_conv.csv"
CONFIG = {"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100"}  # vLLM defaults otherwise


def simulate(path: Path, fast_forward: bool) -> dict:
    """Read the trace, simulate it to the end, summarize: wall seconds and what came out.
    Fast-forward runs as `servescope sim --summary` does (no records: the KV cache counted,
    core/kv_counting.py); the step path is the block-by-block engine one step at a time."""
    start, cpu = time.perf_counter(), time.process_time()
    _, specs, _ = read_requests(path)
    config, step_time = prepare(EngineConfig.from_dict(CONFIG))
    engine = Engine(config, specs, step_time, fast_forward=fast_forward, records=not fast_forward)
    steps = engine.run_to_end()
    summary = engine.summary()
    return {"seconds": time.perf_counter() - start, "cpu": time.process_time() - cpu,
            "requests": len(specs), "steps": steps, "summary": json.dumps(summary, sort_keys=True)}


def generate_azure(source: Path, out: Path, rows: int) -> None:
    """`rows` rows in the Azure format: the source trace's rows repeated, each repetition
    shifted by the source's span, so arrivals keep the source's rate and burstiness."""
    with source.open(newline="") as f:
        table = [(datetime.datetime.fromisoformat(r["TIMESTAMP"][:26]), r["ContextTokens"],
                  r["GeneratedTokens"]) for r in csv.DictReader(f)]
    first, span = table[0][0], table[-1][0] - table[0][0] + datetime.timedelta(seconds=1)
    with out.open("w") as f:
        f.write("TIMESTAMP,ContextTokens,GeneratedTokens\n")
        for i in range(rows):
            stamp, prompt, output = table[i % len(table)]
            shifted = first + (stamp - first) + span * (i // len(table))
            f.write(f"{shifted:%Y-%m-%d %H:%M:%S.%f}0,{prompt},{output}\n")


def simulate_child(path: Path) -> dict:
    """simulate() in a child process: its result, wall seconds and peak RSS (bytes)."""
    start = time.perf_counter()
    out = subprocess.run([sys.executable, __file__, "--child", str(path)], check=True,
                         capture_output=True, text=True).stdout
    result = json.loads(out.splitlines()[-1])
    result["wall"] = time.perf_counter() - start
    result["peak_rss"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    return result


def report(name: str, fast: dict, step: dict | None) -> None:
    """Wall and CPU seconds (CPU time is what a busy shared machine stretches least)."""
    ratio, same, step_cpu = "-", "-", "-"
    if step is not None:
        ratio = f"{step['cpu'] / fast['cpu']:.1f}x"
        same = "yes" if step["summary"] == fast["summary"] else "NO"
        step_cpu = f"{step['cpu']:.1f}s"
    print(f"{name:<34}{fast['requests']:>10,}{fast['steps']:>11,}{fast['seconds']:>9.1f}s"
          f"{fast['cpu']:>9.1f}s{fast['requests'] / fast['cpu']:>11,.0f}{step_cpu:>11}"
          f"{ratio:>9}{same:>6}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trace", type=Path, default=CONV.resolve(),
                        help="the Azure conversation trace (or another request trace)")
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of the generated file")
    parser.add_argument("--skip-step-path", action="store_true",
                        help="time fast-forward only (no speed-up ratio)")
    parser.add_argument("--keep", type=Path, help="write the generated file here and keep it")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)  # see simulate_child
    args = parser.parse_args()
    if args.child:
        print(json.dumps(simulate(args.child, fast_forward=True)))
        return
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs "
          "(a shared machine stretches every time; the ratio is measured in this run)")
    print(f"{'trace':<34}{'requests':>10}{'steps':>11}{'wall':>10}{'cpu':>10}{'req/cpu-s':>11}"
          f"{'step cpu':>11}{'speed-up':>9}{'same':>6}")
    fast = simulate(args.trace, fast_forward=True)
    step = None if args.skip_step_path else simulate(args.trace, fast_forward=False)
    report(args.trace.name, fast, step)
    with tempfile.TemporaryDirectory() as tmp:
        out = (args.keep or Path(tmp)) / f"azure_{args.rows}.csv"
        out.parent.mkdir(parents=True, exist_ok=True)
        generate_azure(args.trace, out, args.rows)
        big = simulate_child(out)
        report(f"generated {args.rows:,} rows", big, None)
    target = "yes" if fast["seconds"] <= 3.0 else "NO"
    print(f"\n{args.trace.name}: {fast['seconds']:.2f} s wall, {fast['cpu']:.2f} s CPU "
          f"(target <= 3 s: {target} on wall time)")
    if step is not None:
        print(f"fast-forward speed-up over the step-by-step path: {step['cpu'] / fast['cpu']:.1f}x"
              f" CPU ({step['cpu']:.1f} s -> {fast['cpu']:.1f} s), same summary: "
              f"{'yes' if step['summary'] == fast['summary'] else 'NO'}")
    rss = big["peak_rss"] / 2**30
    print(f"generated {args.rows:,} rows: {big['wall']:.1f} s wall in its own process "
          f"(target <= 180 s: {'yes' if big['wall'] <= 180 else 'NO'}), peak RSS {rss:.2f} GiB "
          f"(target < 1.5 GiB: {'yes' if rss < 1.5 else 'NO'})")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
