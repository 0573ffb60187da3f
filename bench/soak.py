"""Soak: a real `servescope serve` process under a classroom's steady traffic for a while (10
minutes by default): followers watching a playing session (reconnecting now and then), an
upload and a session on it every few seconds, and summary and export jobs. Prints /healthz
latency (p50, p99, max; sampled every 50 ms) and the server's memory slope after the warm-up
(MB/min, least squares over samples every 5 s; the server process alone and with its
workers), with the load average: the machine may be shared, so read the figures beside it.
The issue's targets (on an idle machine): p99 under 250 ms, memory flat within 1 MB/min.
Usage: python bench/soak.py [--minutes 10] [--warmup-minutes 2] [--followers 8]
       [--upload-every-s 5] [--job-every-s 10]"""

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
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
from websockets.asyncio.client import connect

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from support.hostile_shares import multipart, trace_of  # noqa: E402  (the tests' helpers)
from support.server import Server  # noqa: E402

sys.path.insert(0, str(ROOT / "backend"))
from servescope.api.jobs.workers import rss_bytes, tree_rss_bytes  # noqa: E402

HEALTHZ_EVERY_S = 0.05
MEMORY_EVERY_S = 5.0
FOLLOWER_LIFE_S = 30.0  # a follower reconnects after this (a student's page reloaded)
MIB = 1024 * 1024
STOP_S = 10  # support.server.Server.stop's wait before it raises
# uvicorn closes a connection idle for its timeout_keep_alive (5 s by default) and httpx keeps
# one for its keepalive_expiry (5 s too): a request sent on a connection idle just under 5 s
# (the uploads' loop sleeps 5 s) met the server closing it. The client lets go sooner.
KEEPALIVE_EXPIRY_S = 2.0


async def healthz(client: httpx.AsyncClient, until: float, out: list[float]) -> None:
    while time.monotonic() < until:
        t0 = time.perf_counter()
        (await client.get("/healthz")).raise_for_status()
        out.append((time.perf_counter() - t0) * 1000)
        await asyncio.sleep(HEALTHZ_EVERY_S)


async def memory(pid: int, until: float, out: list[tuple[float, float, float]]) -> None:
    while time.monotonic() < until:
        out.append((time.monotonic(), rss_bytes(pid) / MIB, tree_rss_bytes(pid) / MIB))
        await asyncio.sleep(MEMORY_EVERY_S)


async def follower(server: Server, sid: str, until: float, counts: Counter[str]) -> None:
    while time.monotonic() < until:
        life = min(until, time.monotonic() + FOLLOWER_LIFE_S)
        async with connect(f"{server.ws_url}/ws/sessions/{sid}?follow=1") as ws:
            while time.monotonic() < life:
                try:
                    await asyncio.wait_for(ws.recv(), 1.0)
                    counts["frames"] += 1
                except TimeoutError:
                    pass
        counts["follows"] += 1


async def driver(server: Server, token: str, sid: str, until: float) -> None:
    """Keeps the teacher's session playing (seeking back to the start when it ends)."""
    async with connect(f"{server.ws_url}/ws/sessions/{sid}?token={token}",
                       origin=server.url) as ws:  # type: ignore[arg-type]
        await ws.send(json.dumps({"type": "play", "v": 1, "speed": 8}))
        while time.monotonic() < until:
            msg = json.loads(await ws.recv())
            if msg["type"] == "status" and msg["done"]:
                await ws.send(json.dumps({"type": "seek", "v": 1, "iter": 0}))
                await ws.send(json.dumps({"type": "play", "v": 1, "speed": 8}))


async def uploads(client: httpx.AsyncClient, every_s: float, until: float,
                  counts: Counter[str]) -> None:
    n = 0
    while time.monotonic() < until:
        body, kind = multipart(trace_of(20_000, f"soak{n}"))
        r = await client.post("/api/traces", content=body, headers={"content-type": kind})
        counts[f"upload {r.status_code}"] += 1
        if r.status_code == 201:
            upload = r.json()  # a session on it names the token the upload answered
            s = await client.post("/api/sessions", json={"workload": {
                "trace": upload["trace_id"], "upload_token": upload["upload_token"]}})
            counts[f"session {s.status_code}"] += 1
        n += 1
        await asyncio.sleep(every_s)


async def jobs(client: httpx.AsyncClient, sid: str, every_s: float, until: float,
               counts: Counter[str]) -> None:
    while time.monotonic() < until:
        for path in (f"/api/sessions/{sid}/summary", f"/api/sessions/{sid}/export"):
            r = await client.get(path, timeout=180)
            counts[f"job {r.status_code}"] += 1
        await asyncio.sleep(every_s)


def slope(samples: list[tuple[float, float]]) -> float:
    """MB per minute, least squares."""
    if len(samples) < 2:
        return float("nan")
    return statistics.linear_regression([t / 60 for t, _ in samples],
                                        [m for _, m in samples]).slope


async def soak(server: Server, args: argparse.Namespace) -> dict[str, Any]:
    until = time.monotonic() + args.minutes * 60
    counts: Counter[str] = Counter()
    lat: list[float] = []
    mem: list[tuple[float, float, float]] = []
    limits = httpx.Limits(keepalive_expiry=KEEPALIVE_EXPIRY_S)
    async with httpx.AsyncClient(base_url=server.url, timeout=60, limits=limits) as client:
        demo = (await client.post("/api/sessions", json={"workload": {"preset": "demo"}})).json()
        sid = demo["session_id"]
        await asyncio.gather(
            healthz(client, until, lat), memory(server.proc.pid, until, mem),
            driver(server, demo["token"], sid, until),
            *[follower(server, sid, until, counts) for _ in range(args.followers)],
            uploads(client, args.upload_every_s, until, counts),
            jobs(client, sid, args.job_every_s, until, counts))
    after = [m for m in mem if m[0] >= mem[0][0] + args.warmup_minutes * 60]
    return {"minutes": args.minutes, "healthz_samples": len(lat),
            "healthz_p50_ms": round(statistics.median(lat), 1),
            "healthz_p99_ms": round(statistics.quantiles(lat, n=100)[98], 1),
            "healthz_max_ms": round(max(lat), 1),
            "server_mb_start_end": [round(mem[0][1]), round(mem[-1][1])],
            "server_slope_mb_per_min": round(slope([(t, m) for t, m, _ in after]), 2),
            "with_workers_slope_mb_per_min": round(slope([(t, m) for t, _, m in after]), 2),
            "peak_with_workers_mb": round(max(m for _, _, m in mem)),
            "load_average": os.getloadavg(), "counts": dict(counts)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--minutes", type=float, default=10.0)
    p.add_argument("--warmup-minutes", type=float, default=2.0)
    p.add_argument("--followers", type=int, default=8)
    p.add_argument("--upload-every-s", type=float, default=5.0)
    p.add_argument("--job-every-s", type=float, default=10.0)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(Path(tmp) / "data", SERVESCOPE_CLIENT_MAX_UPLOADS_PER_HOUR="100000")
        try:
            print(json.dumps(asyncio.run(soak(server, args)), indent=1), flush=True)
        finally:
            t0 = time.monotonic()
            try:
                server.stop()
            except subprocess.TimeoutExpired:
                server.stop(kill=True)
            print(f"the server took {time.monotonic() - t0:.1f} s to stop after SIGTERM "
                  f"(it is killed after {STOP_S:g} s)")


if __name__ == "__main__":
    main()
