"""Async scheduling's cost in simulator speed: request-steps per second of the V1 policy with
and without `async_scheduling` on the same workloads (sim_speed.py's), measured in this run.
Under async, runs of plain decodes take core/scheduler/async_decode.py's vector path.
--run-ahead N: instead, CPU microseconds per record of running ahead unrecorded (a scout's
advance_unrecorded, fast-forward on) over the conversation trace's first N requests in the
page's default config (scale_server.py's), sync and async interleaved a slice at a time so that
both see the same load on a shared machine, and their ratio. --summary-sha N: the first 12 hex
digits of the SHA-1 of the async run's summary (JSON, sorted keys) over those N requests, run to
its end ahead unrecorded: a speed change that is exact leaves it as it was (19,365 requests:
d4d711e925c3)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sim_speed import cases, run_ours  # noqa: E402

SLICE = 2000  # records each engine runs ahead before the other's turn


def page_engines(num_requests: int, modes: tuple[str, ...]) -> dict:
    """An engine per mode ("sync", "async") on the conversation trace's first requests in the
    page's default config (scale_server.py's SESSION_CONFIG: vLLM's defaults for the model
    and GPU)."""
    from trace_scale import CONFIG, CONV

    from servescope.core.config import EngineConfig
    from servescope.core.engine import Engine
    from servescope.traces.load import read_requests

    config = {**CONFIG, "num_gpu_blocks": None, "max_num_seqs": 256,
              "max_num_batched_tokens": 2048}
    specs = read_requests(CONV.resolve())[1][:num_requests]
    return {mode: Engine(EngineConfig.from_dict({**config, "async_scheduling": mode == "async"}),
                         specs) for mode in modes}


def summary_sha(num_requests: int) -> None:
    import hashlib
    import json

    engine = page_engines(num_requests, ("async",))["async"]
    engine.run_to_end()
    text = json.dumps(engine.summary(), sort_keys=True)
    print(f"{num_requests} requests, {engine.iter} records: summary sha1 "
          f"{hashlib.sha1(text.encode()).hexdigest()[:12]}")


def run_ahead(num_requests: int) -> None:
    import time

    engines = page_engines(num_requests, ("sync", "async"))
    cpu, live = dict.fromkeys(engines, 0.0), set(engines)
    while live:
        for mode in sorted(live):
            engine, start = engines[mode], time.process_time()
            goal = engine.iter + SLICE
            while engine.iter < goal:
                if not engine.advance_unrecorded(goal - engine.iter):
                    live.discard(mode)
                    break
            cpu[mode] += time.process_time() - start
    us = {mode: cpu[mode] / engines[mode].iter * 1e6 for mode in engines}
    print(f"{len(engines['async'].done_requests)} requests, {engines['async'].iter} records: "
          "run-ahead sync "
          f"{us['sync']:.2f} us/record, async {us['async']:.2f} us/record, "
          f"async/sync {us['async'] / us['sync']:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=300, help="decode steps per decode case")
    parser.add_argument("--run-ahead", type=int, metavar="N",
                        help="time running ahead over the conversation trace's first N requests")
    parser.add_argument("--summary-sha", type=int, metavar="N",
                        help="the async run's summary digest over the trace's first N requests")
    args = parser.parse_args()
    if args.summary_sha:
        summary_sha(args.summary_sha)
        return
    if args.run_ahead:
        run_ahead(args.run_ahead)
        return
    print(f"{'case':<24}{'sync req-steps/s':>18}{'async req-steps/s':>19}{'async/sync':>12}")
    for name, config, requests, skip in cases(args.steps):
        sync = run_ours(config, requests, skip)
        ours = run_ours({**config, "async_scheduling": True}, requests, skip)
        rate, async_rate = (r["request_steps"] / r["seconds"] for r in (sync, ours))
        print(f"{name:<24}{rate:>18,.0f}{async_rate:>19,.0f}{async_rate / rate:>11.2f}x")


if __name__ == "__main__":
    main()
