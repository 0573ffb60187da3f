"""Server figures at trace scale, on a real `servescope serve` process: an Azure-format upload
of `--requests` rows (the Azure conversation trace's rows repeated, as bench/trace_scale.py
generates them) simulated on Llama 3.1 8B / H100; the init's size, time from upload to the
first step frame, to the whole request list read in pages, and from session start to a seek at
the last arrival (answered by a leap from the scout's checkpoints, api/leaps/scout.py, when the
scout gets there first); the server's peak RSS, and that of its processes (the scout's), and its CPU
seconds while it simulates ahead; then
/healthz latency (p50/p99) idle, as the baseline, and while a jsonl export, a full diagnosis and
a summary of that session run at once, with their ratio. Browser frame time at 28k blocks:
bench/render.py --blocks 28027.
With --watch-s S (a run too long to wait for, e.g. 1,000,000 requests) it skips the seek and
reports how far the simulation got in S seconds, its CPU time per record and the RSS.
The session runs the page's default config (async scheduling on; --sync for off).
--seek-only stops after the seek, with the CPU seconds the server and its processes (the scout)
had spent by then.
Usage: python bench/scale_server.py [--requests 200000] [--trace FILE] [--no-heavy]
       [--watch-s S] [--seek-only] [--json F] [--sync]"""

from __future__ import annotations

import argparse
import json
import os
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
sys.path.insert(0, str(ROOT / "bench"))
from support.server import Server, request_list  # noqa: E402  (the tests' real-server helpers)
from trace_scale import CONFIG, CONV, generate_azure  # noqa: E402

# trace_scale.py's engine (vLLM's defaults for the model and GPU: 28,507 blocks, max_num_seqs
# 256, a 2,048-token budget) over the upload's base config, the demo's small pool; the session
# turns async scheduling on as the page does for a model and GPU (--sync: off)
SESSION_CONFIG = {**CONFIG, "num_gpu_blocks": None, "max_num_seqs": 256,
                  "max_num_batched_tokens": 2048}


def last_arrival_s(path: Path) -> float:
    """Seconds from the file's first row to its last (rows are in time order)."""
    from datetime import datetime
    with path.open() as f:
        f.readline()
        first = f.readline().split(",")[0]
        last = first
        for line in f:
            last = line.split(",", 1)[0]
    stamp = lambda t: datetime.fromisoformat(t[:26])  # noqa: E731
    return (stamp(last) - stamp(first)).total_seconds()


def rss_kib(pid: int) -> tuple[int, int]:
    """(current, peak) resident set of a process, KiB, from /proc."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text()
                  .splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


def descendants(pid: int) -> list[int]:
    """The processes a process has started, and theirs (the job workers, the scouts)."""
    kids = []
    for task in Path(f"/proc/{pid}/task").glob("*"):  # (each thread's own children)
        try:
            kids += [int(k) for k in (task / "children").read_text().split()]
        except OSError:
            continue
    return kids + [d for k in kids for d in descendants(k)]


def alive_rss_kib(pid: int) -> int:
    try:
        return rss_kib(pid)[0]
    except (OSError, KeyError):  # it has ended meanwhile
        return 0


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def alive_cpu_s(pid: int) -> float:
    try:
        return cpu_s(pid)
    except (OSError, IndexError):  # it has ended meanwhile
        return 0.0


def session_timings(server: Server, upload: dict[str, str], last_arrival: float | None,
                    t_upload: float, config: dict) -> dict[str, float]:
    """Upload to init and to the first frame, the request list's pages, then (unless
    `last_arrival` is None) session start to a seek at the last arrival. `upload`: what
    POST /api/traces answered (the trace's id and the upload token it needs)."""
    out: dict[str, float] = {}
    with connect(f"{server.ws_url}/ws/sessions/new", max_size=None,
                 origin=server.url) as ws:  # type: ignore[arg-type]
        ws.send(json.dumps({"type": "configure", "v": 1, "config": config,
                            "workload": {"trace": upload["trace_id"],
                                         "upload_token": upload["upload_token"]}}))
        ws.send(json.dumps({"type": "step", "v": 1, "n": 1}))
        started = None
        while True:
            text = ws.recv()
            msg = json.loads(text)
            if msg["type"] == "init":
                started = time.perf_counter()
                out["upload_to_init_s"] = started - t_upload
                out["init_bytes"] = len(text)
                out["session_id"] = msg["session_id"]  # type: ignore[assignment]
            if msg["type"] == "step":
                out["upload_to_first_frame_s"] = time.perf_counter() - t_upload
                break
        t = time.perf_counter()
        listed = request_list(server.get, str(out["session_id"]))
        out["request_list_s"] = time.perf_counter() - t
        out["request_list_entries"] = len(listed)
        if last_arrival is None:
            return out
        ws.send(json.dumps({"type": "seek", "v": 1, "time_s": last_arrival}))
        while True:
            msg = json.loads(ws.recv())
            # the record at the seek starts at or before the last arrival, within one step
            if msg["type"] == "status" and msg["iters"][0] > 0:
                assert started is not None
                out["session_start_to_seek_at_end_s"] = time.perf_counter() - started
                pid = server.proc.pid  # CPU so far: the server's, and its processes' (the scout)
                out["server_cpu_s_at_seek"] = cpu_s(pid)
                out["processes_cpu_s_at_seek"] = sum(map(alive_cpu_s, descendants(pid)))
                return out


def sample_rss(pid: int, stop: threading.Event, peaks: list[int],
               child_peaks: list[int]) -> None:
    """RSS every 0.2 s, of the server and of its processes together (the scout's is most of
    theirs); a line on stderr every 30 s (RSS and CPU so far) for long runs."""
    start, said = time.perf_counter(), 0.0
    while not stop.is_set():
        try:
            peaks.append(rss_kib(pid)[0])
            child_peaks.append(sum(map(alive_rss_kib, descendants(pid))))
            if time.perf_counter() - said >= 30:
                said = time.perf_counter()
                print(f"  {said - start:6.0f} s: RSS {peaks[-1] / 1024:.0f} MiB, server CPU "
                      f"{cpu_s(pid):.0f} s", file=sys.stderr)
        except OSError:  # the server has stopped
            return
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
    ap.add_argument("--trace", type=Path, default=CONV.resolve(),
                    help="the Azure-format trace whose rows are repeated")
    ap.add_argument("--no-heavy", action="store_true", help="skip the /healthz-under-load part")
    ap.add_argument("--watch-s", type=float, default=0.0,
                    help="no seek at the end: watch the simulation this long, then stop")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--sync", action="store_true", help="async scheduling off")
    ap.add_argument("--seek-only", action="store_true",
                    help="stop after the seek at the last arrival (no run to the end)")
    args = ap.parse_args()
    config = {**SESSION_CONFIG, "async_scheduling": not args.sync}
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} "
          "CPUs (a shared machine stretches wall times; CPU seconds stretch less)")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "azure.csv"
        generate_azure(args.trace, path, args.requests)
        last = last_arrival_s(path)
        server = Server(Path(tmp) / "data", SERVESCOPE_JOB_TIMEOUT_S="600",
                        SERVESCOPE_SESSION_GRACE_S="86400",  # --watch-s outlives the socket
                        SERVESCOPE_MAX_REQUESTS_PER_SESSION=str(max(args.requests, 1_000_000)))
        try:
            figures = run(server, path, last, not args.no_heavy and not args.watch_s,
                          args.watch_s, config, args.seek_only and not args.watch_s)
        finally:
            server.stop()
    figures["load_average_after"] = " ".join(f"{x:.1f}" for x in os.getloadavg())
    for k, v in figures.items():
        print(f"{k:38s} {v:.3f}" if isinstance(v, float) else f"{k:38s} {v}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))


def run(server: Server, path: Path, last: float, with_heavy: bool,
        watch_s: float, config: dict, seek_only: bool = False) -> dict[str, object]:
    pid = server.proc.pid
    base = healthz_ms(server.url, 200) if with_heavy else []
    stop, rss, child_rss = threading.Event(), [rss_kib(pid)[0]], [0]
    sampler = threading.Thread(target=sample_rss, args=(pid, stop, rss, child_rss))
    sampler.start()
    cpu0 = cpu_s(pid)
    t0 = time.perf_counter()
    with path.open("rb") as f:
        r = httpx.post(server.url + "/api/traces", files={"file": ("azure.csv", f)},
                       timeout=600)
    r.raise_for_status()
    upload_s = time.perf_counter() - t0
    print(f"uploaded {r.json()['num_requests']} requests in {upload_s:.1f} s; last arrival "
          f"{last:.0f} s", file=sys.stderr)
    timings = session_timings(server, r.json(), None if watch_s else last, t0, config)
    print(f"session: {timings}", file=sys.stderr)
    sid = str(timings.pop("session_id"))
    if watch_s:  # a run too long to wait for: how far it got, at what cost
        time.sleep(watch_s)
    if seek_only:
        stop.set()
        sampler.join()
        return {"requests": r.json()["num_requests"], "upload_s": upload_s, **timings}
    while not watch_s and not all(e["done"] for e in
                                  server.get(f"/api/sessions/{sid}")["simulated"]):
        time.sleep(0.5)
    timings["upload_to_simulated_end_s" if not watch_s else "watched_s"] = \
        time.perf_counter() - t0
    (simulated,) = server.get(f"/api/sessions/{sid}")["simulated"]
    cpu = cpu_s(pid) - cpu0
    figures: dict[str, object] = {
        "requests": r.json()["num_requests"], "records": simulated["num_records"],
        "simulation_done": simulated["done"], "simulation_error": simulated["error"],
        "upload_s": upload_s, **timings, "server_cpu_s": cpu,
        "server_cpu_us_per_record": cpu / max(1, simulated["num_records"]) * 1e6,
        "peak_rss_mib_while_simulating": max(rss) / 1024,
        "peak_rss_mib_of_its_processes": max(child_rss) / 1024}
    print(f"simulated; peak RSS {max(rss) / 1024:.0f} MiB", file=sys.stderr)
    if with_heavy:
        done: list[str] = []
        threads = heavy(server.url, sid, done)
        loaded = healthz_ms(server.url, 300)
        for t in threads:
            t.join()
        figures.update({
            "peak_rss_mib_with_heavy_routes": max(rss) / 1024,
            "healthz_p50_ms_idle": statistics.median(base), "healthz_p99_ms_idle": p99(base),
            "healthz_p50_ms_heavy": statistics.median(loaded),
            "healthz_p99_ms_heavy": p99(loaded),
            "healthz_p99_ratio_heavy_to_idle": p99(loaded) / p99(base), "heavy": done})
    stop.set()
    sampler.join()
    return figures


if __name__ == "__main__":
    main()
