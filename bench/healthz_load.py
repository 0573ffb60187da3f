"""Event-loop latency under heavy work, on a real `servescope serve` process: /healthz sampled
every ~10 ms and a follower's frame rate on a playing session, with nothing heavy running (the
baseline), while a ~500,000-record session simulates ahead (its first seconds), and while a
jsonl export, a full diagnosis and a summary of that session run at once. Prints p50/p99/max
latency, fps, the peak resident memory of the server and its job workers together (what
memory_cap_mb bounds) in each window, and the load average (the machine may be shared: read
the figures beside it).
With --all-routes the csv and bench exports, the overview and the percentiles run too (their
work grows with the finished requests: try --requests 40000 --budget 256, about as many
rows as a 4 MiB request body holds).
Usage: python bench/healthz_load.py [--requests 2000] [--budget 8] [--seconds 20]
       [--memory-cap-mb 8192] [--all-routes]"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from websockets.asyncio.client import connect

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from support.server import Server  # noqa: E402  (the tests' real-server helper)

PROMPT, OUTPUT = 2000, 50  # per request: with a budget of 8 tokens a step, ~256 steps each


def big_session(requests: int, budget: int) -> dict[str, Any]:
    """`requests` requests of 2,000 prompt and 50 output tokens, all arriving at once, under a
    token budget of `budget`: about requests * 2,050 / budget steps (capped at 500,000)."""
    rows = [{"id": f"r{i}", "prompt_len": PROMPT, "output_len": OUTPUT, "arrival_s": 0.0}
            for i in range(requests)]
    return {"config": {"max_num_batched_tokens": budget, "max_num_seqs": 16,
                       "num_gpu_blocks": 4096, "enable_prefix_caching": False},
            "workload": {"requests": rows}}


def small_session() -> dict[str, Any]:
    rows = [{"id": f"s{i}", "prompt_len": 256, "output_len": 8000, "arrival_s": i * 0.05}
            for i in range(64)]
    return {"config": {"num_gpu_blocks": 4096}, "workload": {"requests": rows}}


def p99(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=100, method="inclusive")[98] if len(xs) > 1 \
        else float("nan")


async def healthz(client: httpx.AsyncClient, until: float) -> list[float]:
    out = []
    while time.monotonic() < until:
        t = time.perf_counter()
        (await client.get("/healthz")).raise_for_status()
        out.append((time.perf_counter() - t) * 1000)
        await asyncio.sleep(0.01)
    return out


async def frames(ws: Any, until: float) -> int:
    """`step` frames received before `until`."""
    n = 0
    while (left := until - time.monotonic()) > 0:
        try:
            msg = json.loads(await asyncio.wait_for(ws.recv(), left))
        except TimeoutError:
            break
        n += msg["type"] == "step"
    return n


def tree_rss_mib(pid: int) -> float:
    """Resident MiB of a process and all its descendants (the server and its job workers)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        child = int(stat.parent.name)
        children.setdefault(int(fields[1]), []).append(child)
        rss[child] = int(fields[21])
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        todo += children.get(p, [])
    return total * os.sysconf("SC_PAGE_SIZE") / 2**20


async def peak_rss(pid: int, until: float) -> float:
    peak = 0.0
    while time.monotonic() < until:
        peak = max(peak, tree_rss_mib(pid))
        await asyncio.sleep(0.1)
    return peak


async def peak_until_done(pid: int, procs: list[subprocess.Popen[str]]) -> float:
    """Peak RSS of the server and its workers until the heavy routes have all answered."""
    peak = 0.0
    while any(p.poll() is None for p in procs):
        peak = max(peak, tree_rss_mib(pid))
        await asyncio.sleep(0.1)
    return peak


async def window(server: Server, follow: Any, seconds: float) -> dict[str, float]:
    until = time.monotonic() + seconds
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        lat, n, rss = await asyncio.gather(healthz(client, until), frames(follow, until),
                                           peak_rss(server.proc.pid, until))
    return {"p50_ms": statistics.median(lat), "p99_ms": p99(lat), "max_ms": max(lat),
            "samples": len(lat), "fps": n / seconds, "rss_mib": rss}


HEAVY = ("export?format=jsonl", "diagnosis?full=1", "summary")
# with --all-routes: the routes whose work grows with the finished requests
PER_REQUEST = ("export?format=csv", "export?format=bench", "overview", "percentiles")


def heavy(server: Server, sid: str, all_routes: bool) -> list[subprocess.Popen[str]]:
    paths = [f"/api/sessions/{sid}/{route}" for route in HEAVY + PER_REQUEST * all_routes]
    return [subprocess.Popen(["curl", "-s", "-o", "/dev/null", "-w",
                              f"{p} %{{http_code}} %{{size_download}} B %{{time_total}} s",
                              server.url + p], stdout=subprocess.PIPE, text=True)
            for p in paths]


async def run(server: Server, args: argparse.Namespace) -> None:
    origin = server.url
    async with httpx.AsyncClient(base_url=server.url, timeout=600,
                                 headers={"origin": origin}) as c:
        small = (await c.post("/api/sessions", json=small_session())).json()
        async with connect(f"{server.ws_url}{small['ws_path']}", origin=origin,
                           max_size=None) as driver, \
                connect(f"{server.ws_url}/ws/sessions/{small['session_id']}?follow=1",
                        origin=origin, max_size=None) as follower:
            drain = asyncio.create_task(frames(driver, time.monotonic() + 3600))

            async def playing() -> dict[str, float]:
                await driver.send(json.dumps({"type": "play", "v": 1, "speed": 1}))
                out = await window(server, follower, args.seconds)
                await driver.send(json.dumps({"type": "pause", "v": 1}))
                return out

            await frames(follower, time.monotonic() + 1)  # past init and the first keyframe
            rows = {"baseline": await playing()}
            t0 = time.monotonic()
            big = (await c.post("/api/sessions",
                                json=big_session(args.requests, args.budget))).json()
            rows["simulating"] = await playing()  # the big session simulating ahead
            while not (info := (await c.get(f"/api/sessions/{big['session_id']}"))
                       .json()["simulated"][0])["done"]:
                await asyncio.sleep(1)
            print(f"big session: {info['num_records']} records, simulated in "
                  f"{time.monotonic() - t0:.0f} s", flush=True)
            procs = heavy(server, big["session_id"], args.all_routes)
            rows["heavy"] = await playing()
            load = os.getloadavg()
            drain.cancel()
            peak = await peak_until_done(server.proc.pid, procs)
    report(rows, load)
    for p in procs:
        print("heavy:", p.stdout.read() if p.stdout else "")
    print(f"peak RSS of the server and its workers until the heavy routes ended: "
          f"{max(peak, rows['heavy']['rss_mib']):.0f} MiB")


def report(rows: dict[str, dict[str, float]], load: tuple[float, float, float]) -> None:
    print(f"{'':10s} {'p50 ms':>8s} {'p99 ms':>8s} {'max ms':>8s} {'fps':>6s} "
          f"{'peak RSS MiB':>12s} samples")
    for name, w in rows.items():
        print(f"{name:10s} {w['p50_ms']:8.1f} {w['p99_ms']:8.1f} {w['max_ms']:8.1f} "
              f"{w['fps']:6.1f} {w['rss_mib']:12.0f} {w['samples']}")
    base = rows["baseline"]["p99_ms"]
    print(f"p99 ratio to baseline: simulating {rows['simulating']['p99_ms'] / base:.2f}, heavy "
          f"{rows['heavy']['p99_ms'] / base:.2f}; load average {load[0]:.2f} {load[1]:.2f} "
          f"{load[2]:.2f} on {os.cpu_count()} CPUs")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--budget", type=int, default=8, help="max_num_batched_tokens")
    ap.add_argument("--seconds", type=float, default=20.0, help="each sampling window")
    ap.add_argument("--memory-cap-mb", type=int, default=8192, help="the server's cap")
    ap.add_argument("--all-routes", action="store_true",
                    help="also the csv and bench exports, the overview and the percentiles")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(Path(tmp) / "data", SERVESCOPE_JOB_TIMEOUT_S="600",
                        SERVESCOPE_SESSION_GRACE_S="3600",  # nobody drives the big one
                        SERVESCOPE_MEMORY_CAP_MB=str(args.memory_cap_mb))
        try:
            asyncio.run(run(server, args))
        finally:
            server.stop()


if __name__ == "__main__":
    main()
