"""A classroom on one machine: a teacher's session plays while 40 students follow it and 20
more open sessions of their own, each page load asking for what the page asks for (the request
list, the overview strip, the percentiles). Prints the followers' frame rate and the worst gap
between two frames a follower saw, and how many page-load requests were refused, all measured
in this run against a real `servescope serve` on loopback.

    python bench/classroom.py                      # this tree
    python bench/classroom.py --tree /tmp/base     # another checkout of the project (before)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from local_server import free_port, start_server  # bench/local_server.py
from websockets.asyncio.client import connect

ROOT = Path(__file__).resolve().parents[1]
TEACHER = {"workload": {"synthetic": {"num_requests": 600, "request_rate": 15.0, "seed": 1}}}
STUDENT = {"workload": {"preset": "demo"}}
BROWSERS = ThreadPoolExecutor(64)  # the pages' REST requests, each browser its own
# the bench client may lag behind (no pings), and its sockets close without waiting long
SOCKET = {"max_size": 2**26, "ping_interval": None, "close_timeout": 1}


def get(url: str) -> int:
    """One REST request's status (a page load's overview, percentiles, request list)."""
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            r.read()
            return r.status
    except urllib.error.HTTPError as err:
        return err.code
    except OSError:
        return 0


class Page:
    """One browser page: a socket and the REST requests it makes when it loads."""

    def __init__(self, http: str) -> None:
        self.http = http
        self.frames: list[float] = []
        self.statuses: list[int] = []
        self.ws = None

    async def load(self, sid: str) -> None:
        base = f"{self.http}/api/sessions/{sid}"
        for path in ("/requests?offset=0&limit=10000", "/overview?bins=600", "/percentiles?"):
            loop = asyncio.get_running_loop()  # as many at once as there are pages loading
            self.statuses.append(await loop.run_in_executor(BROWSERS, get, base + path))

    async def read(self, until: float) -> None:
        loop = asyncio.get_running_loop()
        while loop.time() < until:
            try:
                text = await asyncio.wait_for(self.ws.recv(), max(0.01, until - loop.time()))
            except (TimeoutError, Exception):  # the window ended, or the socket closed
                return
            if text.startswith('{"type":"step"'):
                self.frames.append(loop.time())

    def worst_gap(self, start: float, end: float) -> float:
        times = [start, *(t for t in self.frames if start <= t <= end), end]
        return max(b - a for a, b in zip(times, times[1:], strict=False))


async def session_id(ws) -> str:  # type: ignore[no-untyped-def]
    while True:
        msg = json.loads(await ws.recv())
        if msg["type"] == "init":
            return str(msg["session_id"])


async def student(http: str, ws_url: str, origin: str, until: float) -> Page:
    page = Page(http)
    page.ws = await connect(f"{ws_url}/ws/sessions/new", origin=origin, **SOCKET)
    await page.ws.send(json.dumps({"type": "configure", "v": 1, **STUDENT}))
    sid = await session_id(page.ws)
    await page.load(sid)
    await page.ws.send(json.dumps({"type": "play", "v": 1, "speed": 1.0}))
    await page.read(until)
    return page


async def run(args: argparse.Namespace, port: int) -> dict[str, float]:
    http, ws_url = f"http://127.0.0.1:{port}", f"ws://127.0.0.1:{port}"
    origin = http
    loop = asyncio.get_running_loop()
    async with connect(f"{ws_url}/ws/sessions/new", origin=origin, **SOCKET) as teacher:
        await teacher.send(json.dumps({"type": "configure", "v": 1, **TEACHER}))
        sid = await session_id(teacher)
        followers = [Page(http) for _ in range(args.followers)]
        for f in followers:
            f.ws = await connect(f"{ws_url}/ws/sessions/{sid}?follow=1", **SOCKET)
        await teacher.send(json.dumps({"type": "play", "v": 1, "speed": args.speed}))
        start = loop.time()
        end = start + args.seconds
        reading = [asyncio.create_task(f.read(end)) for f in followers]
        own = Page(http)  # the teacher's page reads its frames too
        own.ws = teacher
        reading.append(asyncio.create_task(own.read(end)))
        loads = [asyncio.create_task(f.load(sid)) for f in followers]  # the room's page loads
        await asyncio.sleep(args.students_after_s)
        students = [asyncio.create_task(asyncio.wait_for(  # a page that never gets its
            student(http, ws_url, origin, end), end - loop.time() + 30))  # init gives up
            for _ in range(args.sessions)]
        await asyncio.gather(*loads)
        await asyncio.gather(*reading)
        pages = await asyncio.gather(*students, return_exceptions=True)
        opened = [p for p in pages if isinstance(p, Page)]
        failed = [repr(p) for p in pages if not isinstance(p, Page)]
        if failed:
            print(f"{len(failed)} private sessions failed, e.g. {failed[0]}", file=sys.stderr)
        await asyncio.gather(*(p.ws.close() for p in [*followers, *opened]))
    fps = [len([t for t in f.frames if start <= t <= end]) / args.seconds for f in followers]
    gaps = [f.worst_gap(start, end) for f in followers]
    statuses = [s for p in [*followers, *opened] for s in p.statuses]
    return {"fps_median": statistics.median(fps), "fps_min": min(fps),
            "gap_worst_s": max(gaps), "gap_median_s": statistics.median(gaps),
            "students_opened": len(opened), "page_requests": len(statuses),
            "refused": sum(1 for s in statuses if s != 200)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout to serve")
    parser.add_argument("--followers", type=int, default=40)
    parser.add_argument("--sessions", type=int, default=20, help="new private sessions")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--speed", type=float, default=1.0)
    parser.add_argument("--students-after-s", type=float, default=2.0,
                        help="when the private sessions open, after the teacher plays")
    args = parser.parse_args()
    port = free_port()
    with tempfile.TemporaryDirectory() as data_dir:
        proc = start_server(data_dir, port, args.tree.resolve())
        try:
            result = asyncio.run(run(args, port))
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:  # a server that does not stop is not waited for
                print("the server did not stop within 15 s of SIGTERM: killed", file=sys.stderr)
                proc.kill()
    print(f"classroom bench: {args.tree.resolve()}, {args.followers} followers of one session "
          f"at {args.speed}x, {args.sessions} new private sessions {args.students_after_s:g} s "
          f"in, {args.seconds:g} s, {os.cpu_count()} CPUs")
    rows = [("followers' frames/s (median)", f"{result['fps_median']:.1f}"),
            ("followers' frames/s (slowest)", f"{result['fps_min']:.1f}"),
            ("worst gap between frames, s (any follower)", f"{result['gap_worst_s']:.3f}"),
            ("worst gap between frames, s (median follower)", f"{result['gap_median_s']:.3f}"),
            ("private sessions opened", f"{result['students_opened']}"),
            ("page-load requests refused", f"{result['refused']} of {result['page_requests']}")]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"  {key:<{width}}  {value:>12}")


if __name__ == "__main__":
    main()
