"""Concurrent streams on one `servescope serve --openai` process at time scale 1: for each level
of concurrency, one client process keeps that many streams open (each a completion of --output
tokens on a 32-token prompt, a new one as soon as one ends; their starts spread over one
request's time so they do not run in lockstep), counted after one request's time for --seconds or
two requests' times, whichever is longer. Prints the streams
finished a second against the baseline measured in the same run (the engine's own simulated
rate offline for the same config and load: N requests of the same lengths run to the end), and
the clock's lag from the server's servescope:stream_lag_seconds over the level (mean, and the
99th percentile's bucket against one step at that load); then the highest level whose clock
stayed within one step of wall time, and how far behind it fell beyond it.

The client is raw asyncio streams (HTTP/1.1 keep-alive, the chunked body read to its last
chunk): httpx parsing every SSE line capped the first cut at ~30 streams/s (200 open), ~5x
below what the server sends, so the load generator was what was measured.
Usage: python bench/endpoint.py [--levels 200,1000,2000,4000] [--seconds 8] [--output 64]"""

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

from local_server import ROOT, free_port, wait_until_up

sys.path.insert(0, str(ROOT / "backend"))
from servescope.core.config import EngineConfig  # noqa: E402
from servescope.core.engine import Engine  # noqa: E402
from servescope.core.request import RequestSpec  # noqa: E402

# room for every level's streams at once (blocks, sequences, one step's prefills)
CONFIG = {"num_gpu_blocks": 200_000, "block_size": 16, "max_model_len": 4096,
          "max_num_seqs": 8192, "max_num_batched_tokens": 262_144}
PROMPT_TOKENS = 32
LAG = "servescope:stream_lag_seconds"
LAST_CHUNK = b"\r\n0\r\n\r\n"  # a chunked body's end (h11 writes sizes without leading zeros)


def start(folder: str, port: int) -> subprocess.Popen[bytes]:
    config = Path(folder) / "config.json"
    config.write_text(json.dumps(CONFIG))
    env = {**os.environ, "SERVESCOPE_DATA_DIR": folder, "PYTHONPATH": str(ROOT / "backend")}
    proc = subprocess.Popen([sys.executable, "-m", "servescope.cli", "serve", "--openai",
                             "--config", str(config), "--port", str(port), "--log-level",
                             "warning"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    return wait_until_up(proc, f"http://127.0.0.1:{port}/health")


def baseline(streams: int, output: int) -> tuple[float, float]:
    """(streams a second, seconds a step) the engine simulates offline for `streams` requests
    of the bench's lengths run together to the end: what a server that keeps up delivers."""
    engine = Engine(EngineConfig(**CONFIG),  # type: ignore[arg-type]
                    [RequestSpec(f"r{i}", PROMPT_TOKENS, output, arrival_s=0.0)
                     for i in range(streams)])
    steps = engine.run_to_end()
    return streams / engine.time_s, engine.time_s / steps


def histogram(text: str) -> tuple[list[tuple[float, float]], float, float]:
    """servescope:stream_lag_seconds from /metrics: (le, cumulative count) buckets, sum, count."""
    buckets, total, count = [], 0.0, 0.0
    for line in text.splitlines():
        if line.startswith(LAG + "_bucket{"):
            le = line.split('le="', 1)[1].split('"', 1)[0]
            buckets.append((float(le), float(line.rsplit(" ", 1)[1])))
        elif line.startswith(LAG + "_sum{"):
            total = float(line.rsplit(" ", 1)[1])
        elif line.startswith(LAG + "_count{"):
            count = float(line.rsplit(" ", 1)[1])
    return buckets, total, count


def lag_over(before: str, after: str) -> tuple[float, float]:
    """(mean lag, the bound of the bucket holding the 99th percentile) between two scrapes."""
    (b0, s0, c0), (b1, s1, c1) = histogram(before), histogram(after)
    count = c1 - c0
    if count <= 0:
        return 0.0, 0.0
    for (le, n1), (_, n0) in zip(b1, b0, strict=True):
        if n1 - n0 >= 0.99 * count:
            return (s1 - s0) / count, le
    return (s1 - s0) / count, float("inf")


async def get(port: int, path: str) -> str:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n".encode())
    text = (await reader.read()).decode()
    writer.close()
    return text


class Load:
    """`streams` connections each posting one streamed completion after another until `stop`;
    `finished` counts the answers read to their end between `count_from` and `stop`."""

    def __init__(self, port: int, streams: int, output: int, seconds: float,
                 request_s: float) -> None:
        body = json.dumps({"prompt": list(range(PROMPT_TOKENS)), "max_tokens": output,
                           "ignore_eos": True, "stream": True}).encode()
        self.request = (f"POST /v1/completions HTTP/1.1\r\nHost: bench\r\nContent-Type: "
                        f"application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body
        self.port, self.streams, self.finished, self.request_s = port, streams, 0, request_s
        self.count_from = time.monotonic() + request_s
        self.stop = self.count_from + max(seconds, 2 * request_s)

    async def one(self, delay_s: float) -> None:
        await asyncio.sleep(delay_s)
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        while time.monotonic() < self.stop:
            writer.write(self.request)
            tail = b""
            while not tail.endswith(LAST_CHUNK):
                data = await reader.read(1 << 16)
                if not data:
                    raise SystemExit("the server closed a stream")
                tail = (tail + data)[-len(LAST_CHUNK):]
            if self.count_from <= time.monotonic() < self.stop:
                self.finished += 1
        writer.close()

    async def run(self) -> tuple[float, str, str]:
        """(streams finished a second while counting, /metrics at its start and its end)."""
        async def scrapes() -> tuple[str, str]:
            await asyncio.sleep(self.count_from - time.monotonic())
            first = await get(self.port, "/metrics")
            await asyncio.sleep(max(0.0, self.stop - time.monotonic()))
            return first, await get(self.port, "/metrics")

        spread = self.request_s / self.streams
        *_, (first, last) = await asyncio.gather(
            *(self.one(k * spread) for k in range(self.streams)), scrapes())
        return self.finished / (self.stop - self.count_from), first, last


def level(port: int, streams: int, seconds: float, output: int) -> tuple[float, float]:
    """Runs one level and prints its line: (its 99th percentile lag's bound, one step), s."""
    expected, step = baseline(streams, output)
    load = os.getloadavg()[0]
    rate, first, last = asyncio.run(Load(port, streams, output, seconds,
                                         streams / expected).run())
    mean, p99 = lag_over(first, last)
    print(f"{streams:>6} open: {rate:7.1f} streams/s, baseline {expected:7.1f} "
          f"(x{rate / expected:.2f}); lag mean {mean * 1000:6.1f} ms, p99 <= {p99 * 1000:6.1f} "
          f"ms, one step {step * 1000:5.1f} ms ({'within' if p99 <= step else 'behind'}); "
          f"load average {load:.1f} -> {os.getloadavg()[0]:.1f}", flush=True)
    return p99, step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--levels", default="200,1000,2000,4000")
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--output", type=int, default=64)
    args = parser.parse_args()
    port = free_port()
    print(f"{os.cpu_count()} cores; {args.output} tokens a stream", flush=True)
    with tempfile.TemporaryDirectory() as folder:
        proc = start(folder, port)
        try:
            within, beyond = None, []
            for streams in (int(n) for n in args.levels.split(",")):
                p99, step = level(port, streams, args.seconds, args.output)
                if p99 <= step:
                    within = streams
                else:
                    beyond.append((streams, p99))
            print(f"within one step up to {within} open streams" if within
                  else "no level stayed within one step")
            for streams, p99 in beyond:
                print(f"beyond: {streams} open streams, p99 lag <= {p99 * 1000:.0f} ms")
        finally:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()
