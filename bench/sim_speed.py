"""Simulator speed: request-steps per second of ServeScope's vLLM V1 policy, and of vLLM's own
scheduler (schedule() + update_from_output()) on the same workloads when vLLM is importable
or a Python with vLLM is given by --vllm-python. Prints ratios measured in this run."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from workloads import POISSON, decode_config, decode_requests, poisson_requests  # noqa: E402

from servescope.core.config import EngineConfig  # noqa: E402
from servescope.core.engine import Engine  # noqa: E402
from servescope.core.request import RequestSpec  # noqa: E402


def run_ours(config: dict, requests: list[dict], skip_steps: int = 0) -> dict:
    specs = [RequestSpec(r["id"], r["prompt_len"], r["output_len"], arrival_step=r["arrival_step"])
             for r in requests]
    engine = Engine(EngineConfig.from_dict(config), specs)
    for _ in range(skip_steps):
        engine.step()
    start = time.perf_counter()
    records = list(engine.run())
    elapsed = time.perf_counter() - start
    request_steps = sum(len(r.columns.ids) for r in records)
    decisions = [[[i, n] for i, n in zip(r.columns.ids, r.columns.n.tolist(), strict=True)]
                 for r in records]
    return {"request_steps": request_steps, "steps": len(records), "seconds": elapsed,
            "decisions": decisions}


def cases(num_steps: int) -> list[tuple[str, dict, list[dict], int]]:
    out = [("poisson 200 @0.25/step", POISSON, poisson_requests(), 0)]
    for n in (16, 64, 256, 1024):
        prefill_steps = -(-n * 32 // max(2048, n)) + 1
        out.append((f"decode x{n}", decode_config(n), decode_requests(n, num_steps),
                    prefill_steps))
    return out


def run_vllm(python: str, config: dict, requests: list[dict], skip: int) -> dict | None:
    payload = json.dumps({"config": config, "requests": requests, "skip_steps": skip})
    done = subprocess.run([python, str(HERE / "vllm_driver.py")], input=payload,
                          capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        print(f"  vLLM driver failed: {done.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=300, help="decode steps per decode case")
    parser.add_argument("--vllm-python", help="a Python interpreter that can import vllm")
    args = parser.parse_args()
    python = args.vllm_python or _own_python_if_vllm()
    print(f"{'case':<24}{'steps':>7}{'req-steps/s':>14}{'vLLM req-steps/s':>18}{'ratio':>8}"
          f"{'same decisions':>16}")
    for name, config, requests, skip in cases(args.steps):
        ours = run_ours(config, requests, skip)
        rate = ours["request_steps"] / ours["seconds"]
        theirs = run_vllm(python, config, requests, skip) if python else None
        if theirs:
            vrate = theirs["request_steps"] / theirs["seconds"]
            same = "yes" if theirs["decisions"] == ours["decisions"] else "NO"
            print(f"{name:<24}{ours['steps']:>7}{rate:>14,.0f}{vrate:>18,.0f}"
                  f"{rate / vrate:>7.1f}x{same:>16}")
        else:
            print(f"{name:<24}{ours['steps']:>7}{rate:>14,.0f}{'(no vLLM)':>18}")


def _own_python_if_vllm() -> str | None:
    try:
        import vllm  # noqa: F401
    except ImportError:
        return None
    return sys.executable


if __name__ == "__main__":
    main()
