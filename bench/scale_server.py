"""Server figures at trace scale, on a real `servescope serve` process: a generated Azure-format
upload of `--requests` requests; time from upload to the first step frame and to a seek at the
last arrival; the server's peak RSS while it simulates ahead; then /healthz latency (p50/p99)
idle, as the baseline, and while a jsonl export, a full diagnosis and a summary of that session
run at once, with their ratio. Browser frame time at 28k blocks: bench/render.py --blocks 28027.
Usage: python bench/scale_server.py [--requests 200000] [--rate 80] [--json out.json]"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
from websockets.sync.client import connect

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from support.server import Server  # noqa: E402  (the tests' real-server helper)


def azure_file(path: Path, n: int, rate: float) -> float:
    """Write n rows arriving at `rate` a second; the last arrival, s after the first."""
    with path.open("w") as f:
        f.write("TIMESTAMP,ContextTokens,GeneratedTokens\n")
        for i in range(n):
            s = i / rate
            f.write(f"2023-11-16 {int(s // 3600) % 24:02d}:{int(s // 60) % 60:02d}:"
                    f"{s % 60:010.7f},{100 + i * 37 % 900},{1 + i * 13 % 300}\n")
    return (n - 1) / rate


def rss_kib(pid: int) -> tuple[int, int]:
    """(current, peak) resident set of a process, KiB, from /proc."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text()
                  .splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


def session_timings(server: Server, trace_id: str, last_arrival: float,
                    t_upload: float) -> dict[str, float]:
    out: dict[str, float] = {}
    with connect(f"{server.ws_url}/ws/sessions/new", max_size=None) as ws:
        ws.send(json.dumps({"type": "configure", "v": 1, "workload": {"trace": trace_id}}))
        ws.send(json.dumps({"type": "step", "v": 1, "n": 1}))
        started = None
        while True:
            msg = json.loads(ws.recv())
            if msg["type"] == "init":
                started = time.perf_counter()
                out["session_id"] = msg["session_id"]  # type: ignore[assignment]
            if msg["type"] == "step":
                out["upload_to_first_frame_s"] = time.perf_counter() - t_upload
                break
        ws.send(json.dumps({"type": "seek", "v": 1, "time_s": last_arrival}))
        while True:
            msg = json.loads(ws.recv())
            # the record at the seek starts at or before the last arrival, within one step
            if msg["type"] == "status" and msg["iters"][0] > 0:
                assert started is not None
                out["session_start_to_seek_at_end_s"] = time.perf_counter() - started
                return out


def sample_rss(pid: int, stop: threading.Event, peaks: list[int]) -> None:
    while not stop.is_set():
        peaks.append(rss_kib(pid)[0])
        stop.wait(0.2)


def healthz_ms(url: str, n: int) -> list[float]:
    times = []
    with httpx.Client(timeout=30) as c:
        for _ in range(n):
            t = time.perf_counter()
            c.get(url + "/healthz").raise_for_status()
            times.append((time.perf_counter() - t) * 1000)
            time.sleep(0.01)
    return times


def p99(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=100)[98]


def heavy(url: str, sid: str, done: list[str]) -> list[threading.Thread]:
    def get(path: str) -> None:
        with httpx.Client(timeout=600) as c, c.stream("GET", url + path) as r:
            size = sum(len(chunk) for chunk in r.iter_bytes())
        done.append(f"{path} {r.status_code} {size} B")
    paths = [f"/api/sessions/{sid}/export?format=jsonl", f"/api/sessions/{sid}/diagnosis?full=1",
             f"/api/sessions/{sid}/summary"]
    threads = [threading.Thread(target=get, args=(p,)) for p in paths]
    for t in threads:
        t.start()
    return threads


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=200_000)
    ap.add_argument("--rate", type=float, default=80.0, help="arrivals per second")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "azure.csv"
        last = azure_file(path, args.requests, args.rate)
        server = Server(Path(tmp) / "data", SERVESCOPE_JOB_TIMEOUT_S="600")
        try:
            figures = run(server, path, last)
        finally:
            server.stop()
    for k, v in figures.items():
        print(f"{k:38s} {v:.3f}" if isinstance(v, float) else f"{k:38s} {v}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))


def run(server: Server, path: Path, last: float) -> dict[str, object]:
    base = healthz_ms(server.url, 200)
    stop, rss = threading.Event(), [rss_kib(server.proc.pid)[0]]
    sampler = threading.Thread(target=sample_rss, args=(server.proc.pid, stop, rss))
    sampler.start()
    t0 = time.perf_counter()
    with path.open("rb") as f:
        r = httpx.post(server.url + "/api/traces", files={"file": ("azure.csv", f)},
                       timeout=600)
    r.raise_for_status()
    print(f"uploaded {r.json()['num_requests']} requests", file=sys.stderr)
    timings = session_timings(server, r.json()["trace_id"], last, t0)
    print(f"session: {timings}", file=sys.stderr)
    sid = str(timings.pop("session_id"))
    while not all(e["done"] for e in server.get(f"/api/sessions/{sid}")["simulated"]):
        time.sleep(0.5)
    timings["upload_to_simulated_end_s"] = time.perf_counter() - t0
    simulating = max(rss) / 1024
    print(f"simulated; peak RSS {simulating:.0f} MiB", file=sys.stderr)
    done: list[str] = []
    threads = heavy(server.url, sid, done)
    loaded = healthz_ms(server.url, 300)
    for t in threads:
        t.join()
    stop.set()
    sampler.join()
    return {"requests": r.json()["num_requests"], **timings,
            "peak_rss_mib_while_simulating": simulating,
            "peak_rss_mib_with_heavy_routes": max(rss) / 1024,
            "healthz_p50_ms_idle": statistics.median(base), "healthz_p99_ms_idle": p99(base),
            "healthz_p50_ms_heavy": statistics.median(loaded),
            "healthz_p99_ms_heavy": p99(loaded),
            "healthz_p99_ratio_heavy_to_idle": p99(loaded) / p99(base), "heavy": done}


if __name__ == "__main__":
    main()
