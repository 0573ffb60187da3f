"""Concurrent streams on one `servescope serve --openai` process at time scale 1: for each level
of concurrency, clients (one asyncio process, httpx) keep that many streams open, each a
completion of --output tokens, for --seconds; /metrics is sampled every 0.2 s. Prints the streams
finished per second and the worst servescope:clock_lag_seconds against one step (the placeholder
cost model's step: 10 ms + 0.02 ms a running request, core/step_time.py), then the highest level
whose clock stayed within one step of wall time and how far behind it fell beyond it.
Usage: python bench/endpoint.py [--levels 100,300,1000,2000] [--seconds 8] [--output 64]"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from local_server import ROOT, START_S, free_port

CONFIG = {"num_gpu_blocks": 200_000, "block_size": 16, "max_model_len": 4096,
          "max_num_seqs": 4096, "max_num_batched_tokens": 65_536}
BASE_MS, PER_TOKEN_MS = 10.0, 0.02  # core/step_time.py's placeholder step


def start(folder: str, port: int) -> subprocess.Popen[bytes]:
    config = Path(folder) / "config.json"
    config.write_text(json.dumps(CONFIG))
    env = {**os.environ, "SERVESCOPE_DATA_DIR": folder, "PYTHONPATH": str(ROOT / "backend")}
    proc = subprocess.Popen([sys.executable, "-m", "servescope.cli", "serve", "--openai",
                             "--config", str(config), "--port", str(port), "--log-level",
                             "warning"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + START_S
    while True:
        try:
            httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
            return proc
        except httpx.HTTPError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise SystemExit("server did not start") from None
            time.sleep(0.1)


def sample(text: str, name: str) -> float:
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(name + "{"))


async def level(url: str, streams: int, seconds: float, output: int) -> tuple[float, float, float]:
    """(streams finished a second, worst lag in s, the step time at the load seen, in s)."""
    body = {"prompt": list(range(32)), "max_tokens": output, "ignore_eos": True, "stream": True}
    finished, stop = 0, time.monotonic() + seconds
    limits = httpx.Limits(max_connections=streams + 8, max_keepalive_connections=streams + 8)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:
        async def one() -> None:
            nonlocal finished
            while time.monotonic() < stop:
                async with client.stream("POST", "/v1/completions", json=body) as r:
                    async for _ in r.aiter_lines():
                        pass
                finished += 1

        async def watch() -> tuple[float, float]:
            worst = running = 0.0
            while time.monotonic() < stop:
                text = (await client.get("/metrics")).text
                worst = max(worst, sample(text, "servescope:clock_lag_seconds"))
                running = max(running, sample(text, "vllm:num_requests_running"))
                await asyncio.sleep(0.2)
            return worst, running

        start_s = time.monotonic()
        *_, (worst, running) = await asyncio.gather(*(one() for _ in range(streams)), watch())
        return finished / (time.monotonic() - start_s), worst, (
            BASE_MS + PER_TOKEN_MS * running) / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--levels", default="100,300,1000,2000")
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--output", type=int, default=64)
    args = parser.parse_args()
    port = free_port()
    with tempfile.TemporaryDirectory() as folder:
        proc = start(folder, port)
        try:
            within, beyond = None, []
            for streams in (int(n) for n in args.levels.split(",")):
                rate, lag, step = asyncio.run(level(f"http://127.0.0.1:{port}", streams,
                                                    args.seconds, args.output))
                ok = lag <= step
                print(f"{streams:>6} streams: {rate:8.1f} streams/s finished, worst lag "
                      f"{lag * 1000:8.1f} ms, one step {step * 1000:6.1f} ms "
                      f"({'within' if ok else 'behind'})", flush=True)
                if ok:
                    within = (streams, rate)
                else:
                    beyond.append((streams, lag))
            print(f"sustained within one step: {within[1]:.1f} streams/s at {within[0]} open"
                  if within else "no level stayed within one step")
            for streams, lag in beyond:
                print(f"beyond: {streams} open streams fell {lag * 1000:.0f} ms behind")
        finally:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()
