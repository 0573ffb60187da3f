"""Async scheduling's cost in simulator speed: request-steps per second of the V1 policy with
and without `async_scheduling` on the same workloads (sim_speed.py's), measured in this run.
Under async, runs of plain decodes take core/scheduler/async_decode.py's vector path."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sim_speed import cases, run_ours  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=300, help="decode steps per decode case")
    args = parser.parse_args()
    print(f"{'case':<24}{'sync req-steps/s':>18}{'async req-steps/s':>19}{'async/sync':>12}")
    for name, config, requests, skip in cases(args.steps):
        sync = run_ours(config, requests, skip)
        ours = run_ours({**config, "async_scheduling": True}, requests, skip)
        rate, async_rate = (r["request_steps"] / r["seconds"] for r in (sync, ours))
        print(f"{name:<24}{rate:>18,.0f}{async_rate:>19,.0f}{async_rate / rate:>11.2f}x")


if __name__ == "__main__":
    main()
