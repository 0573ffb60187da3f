"""Window percentiles at trace scale: the page's percentile panel (GET .../percentiles) over
`--requests` finished requests (200,000: the issue's upload) shaped like the Azure conversation
trace's (about 230 output tokens each over about 21 steps a token, some token stretches broken by
a preemption), from their columns (api/reports/latency_columns.py) against the baseline in the
same run: each request's metrics built one by one (DoneRequests.metrics(), which the panel used
before) and numpy's percentiles over the lists. Both include taking the columns off the engine
(DoneRequests.of) and the pickle to the job's worker; the answers must agree.
Usage: python bench/window_percentiles.py [--requests 200000] [--seed 0]"""

from __future__ import annotations

import argparse
import pickle
import time
from types import SimpleNamespace
from typing import Any

import numpy as np

from servescope.api.reports.done_requests import DoneRequests
from servescope.api.reports.overview import LATENCIES, PERCENTILES, percentiles

STEP_S = 0.012  # a decode step of Llama 3.1 8B on H100 with a full batch, about
STEPS_PER_REQUEST = 21  # the conversation trace: 408,418 steps for 19,366 requests
OUTPUT_MEAN = 230  # its mean output length, tokens (rounded)
PREEMPTED_SHARE = 0.05  # requests whose token stretch a preemption breaks in two


def finished_engine(n: int, seed: int) -> Any:
    """What DoneRequests.of reads of an engine: `n` finished requests and the step clock."""
    rng = np.random.default_rng(seed)
    num_steps = n * STEPS_PER_REQUEST
    ends = array_of(np.cumsum(rng.uniform(0.5, 1.5, num_steps) * STEP_S))
    first = rng.integers(0, num_steps - 4 * OUTPUT_MEAN, n)
    outputs = rng.integers(1, 2 * OUTPUT_MEAN, n)
    broken = rng.random(n) < PREEMPTED_SHARE
    done = []
    for k in range(n):
        f, out = int(first[k]), int(outputs[k])
        runs = [(f, out)]
        if broken[k] and out > 2:
            runs = [(f, out // 2), (f + out // 2 + 40, out - out // 2)]
        last = runs[-1][0] + runs[-1][1] - 1
        arrival = float(ends[max(f - 30, 0)]) - 0.01
        done.append(SimpleNamespace(
            id=f"r{k}", prompt_len=500, output_len=out, num_preemptions=int(len(runs) > 1),
            num_cached_tokens=0, arrival_time=arrival, first_scheduled_time=arrival + 0.001,
            finish_time=float(ends[last]), all_token_stretches=runs))
    return SimpleNamespace(done_requests=done, step_end_s=ends,
                           config=SimpleNamespace(frontend_overhead_ms=0.0))


def array_of(values: np.ndarray) -> Any:
    from array import array
    return array("d", values.tolist())


def listed(done: DoneRequests, start_s: float, end_s: float) -> dict[str, Any]:
    """The baseline: every request's metrics, then numpy over the lists."""
    rows = [m for m in done.metrics()
            if start_s <= m["arrival_s"] + (m["e2el_ms"] or 0.0) / 1000.0 <= end_s]
    values = {"ttft_ms": [r["ttft_ms"] for r in rows if r["ttft_ms"] is not None],
              "tpot_ms": [r["tpot_ms"] for r in rows if r["tpot_ms"] is not None],
              "itl_ms": [x for r in rows for x in r["itl_ms"]],
              "e2el_ms": [r["e2el_ms"] for r in rows if r["e2el_ms"] is not None]}
    return {key: {f"p{p}": float(np.percentile(values[key], p)) for p in PERCENTILES}
            for key in LATENCIES}


def timed(fn: Any) -> tuple[float, float, Any]:
    """Wall and CPU seconds of fn() (CPU: the figure to read on a shared machine)."""
    start, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - start, time.process_time() - cpu, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    engine = finished_engine(args.requests, args.seed)
    ends = engine.step_end_s
    window = (ends[len(ends) // 4], ends[3 * len(ends) // 4])  # half the run, brushed

    def shipped() -> DoneRequests:
        done: DoneRequests = pickle.loads(pickle.dumps(DoneRequests.of(engine)))
        return done

    new_s, new_cpu, new = timed(lambda: percentiles(shipped(), 0, True, *window))
    old_s, old_cpu, old = timed(lambda: listed(shipped(), *window))
    agree = all(new[key] == old[key] for key in LATENCIES)
    print(f"{args.requests:,} finished requests, {len(ends):,} steps, "
          f"window {window[0]:.0f}-{window[1]:.0f} s ({new['num_requests']:,} requests)")
    print(f"columns (api/reports/latency_columns.py): {new_s:.2f} s wall, {new_cpu:.2f} s CPU"
          "   target < 2 s")
    print(f"baseline (request by request):            {old_s:.2f} s wall, {old_cpu:.2f} s CPU")
    print(f"ratio baseline/columns (CPU): {old_cpu / new_cpu:.1f}x   answers agree: {agree}")


if __name__ == "__main__":
    main()
