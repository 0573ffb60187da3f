"""Scrape benchmark: a real `servescope serve` with 64 sessions (the demo and 63 more), each
played by a driver at a high speed, scraped at GET /metrics while they play. Prints the
scrape time (client side, median and p95) against GET /healthz on the same server in the
same run (the HTTP and event-loop baseline); and in-process, the CPU time of one collection of
64 sessions at mid-run positions as /metrics writes it, against prometheus-client's
generate_latest over the same collector and over an empty registry."""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest
from websockets.asyncio.client import connect

sys.path.insert(0, str(Path(__file__).resolve().parent))

from stream import free_port, start_server  # noqa: E402

SESSION = {"workload": {"synthetic": {"num_requests": 1000, "request_rate": 100,
                                      "output_len_min": 64, "output_len_max": 512}}}


def get_ms(url: str) -> float:
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as r:
        r.read()
    return (time.perf_counter() - start) * 1000


def post(url: str, body: dict) -> dict:
    req = urllib.request.Request(url, json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


def timings(url: str, n: int) -> tuple[list[float], list[float]]:
    scrape, health = [], []
    for _ in range(n):
        scrape.append(get_ms(url + "/metrics"))
        health.append(get_ms(url + "/healthz"))
        time.sleep(0.05)
    return scrape, health


async def live(port: int, args: argparse.Namespace) -> tuple[list[float], list[float], int]:
    url = f"http://127.0.0.1:{port}"
    for _ in range(args.sessions - 1):
        post(url + "/api/sessions", SESSION)
    sids = [s["session_id"] for s in json.loads(urllib.request.urlopen(
        url + "/api/sessions").read())]
    sockets = [await connect(f"ws://127.0.0.1:{port}/ws/sessions/{sid}", max_size=2**26)
               for sid in sids]
    for ws in sockets:  # not read: the server drops frames for a viewer that lags (no queue)
        await ws.send(json.dumps({"type": "play", "v": 1, "speed": args.speed}))
    await asyncio.sleep(args.warmup_s)
    scrape, health = await asyncio.to_thread(timings, url, args.scrapes)
    size = len(urllib.request.urlopen(url + "/metrics").read())
    for ws in sockets:
        await ws.close()
    return scrape, health, size


def in_process(sessions: int, repeats: int) -> tuple[float, float, float]:
    """CPU ms per collection: /metrics' writer, generate_latest, an empty registry."""
    from servescope.api.reports.metrics import SessionsCollector
    from servescope.api.sessions.registry import Registry
    from servescope.api.settings import Settings
    from servescope.api.uploads.store import Store
    from servescope.api.wire import protocol as P

    async def build() -> Registry:
        settings = Settings(data_dir=Path(tempfile.mkdtemp()))
        registry = Registry(settings, Store(settings.data_dir))
        for _ in range(sessions):
            s = await registry.create_configured(P.Configure(type="configure", **SESSION))
            await s.seek(P.Seek(type="seek", iter=1500))
        return registry

    collector = SessionsCollector(asyncio.run(build()))
    full = CollectorRegistry(auto_describe=False)
    full.register(collector)  # type: ignore[arg-type]
    empty = CollectorRegistry(auto_describe=False)
    out = []
    for run in (collector.text, lambda: generate_latest(full), lambda: generate_latest(empty)):
        run()
        times = []
        for _ in range(repeats):
            start = time.process_time()
            run()
            times.append((time.process_time() - start) * 1000)
        out.append(statistics.median(times))
    return out[0], out[1], out[2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=64)
    parser.add_argument("--speed", type=float, default=5.0)
    parser.add_argument("--scrapes", type=int, default=15)
    parser.add_argument("--warmup-s", type=float, default=3.0)
    args = parser.parse_args()
    text_ms, reference_ms, empty_ms = in_process(args.sessions, 15)
    print(f"in-process, {args.sessions} sessions (CPU, median): /metrics writer {text_ms:.1f} ms;"
          f" prometheus-client generate_latest {reference_ms:.1f} ms "
          f"({reference_ms / max(text_ms, 1e-9):.1f}x the writer); empty registry "
          f"{empty_ms:.3f} ms")
    port = free_port()
    with tempfile.TemporaryDirectory() as data:
        proc = start_server(data, port)
        try:
            scrape, health, size = asyncio.run(live(port, args))
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    med, p95 = statistics.median(scrape), statistics.quantiles(scrape, n=20)[-1]
    hmed = statistics.median(health)
    print(f"GET /metrics during playback of {args.sessions} sessions ({size / 1024:.0f} KiB): "
          f"median {med:.1f} ms, p95 {p95:.1f} ms")
    print(f"GET /healthz on the same server: median {hmed:.1f} ms; scrape / healthz "
          f"{med / max(hmed, 1e-9):.1f}x")


if __name__ == "__main__":
    main()
