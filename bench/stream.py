"""Streaming benchmark: a real `servescope serve` on loopback, one session whose batch holds
256 requests, N viewers reading it. Prints frames per second per viewer, bytes per frame,
and the CPU the server and the clients used; then the time to build one step frame, against
the hand-made string frames were built with before the protocol models, all in this run."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import timeit
from pathlib import Path

from websockets.asyncio.client import connect

from servescope.api.records.track_source import engine_source
from servescope.api.sessions.track import Track
from servescope.api.wire import protocol as P
from servescope.api.wire.keyframes import keyframe
from servescope.api.wire.serialize import request_info
from servescope.api.wire.text import Raw, dump
from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.request import RequestSpec

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from local_server import free_port, start_server  # noqa: E402  (bench/local_server.py)
from support.tracks import run_to_end  # noqa: E402  (the tests' helper)

TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def workload(n: int) -> dict:
    """n requests at t=0 with long outputs: after the prefills the batch holds all n."""
    rows = [{"id": f"r{i}", "arrival_s": 0.0, "prompt_len": 128 + (i * 37) % 256,
             "output_len": 4000} for i in range(n)]
    blocks = n * (384 + 4000) // 16 + 64
    return {"config": {"num_gpu_blocks": blocks, "max_num_seqs": n,
                       "max_num_batched_tokens": 8192},
            "workload": {"requests": rows}}


class Viewer:
    def __init__(self) -> None:
        self.frame_times: list[float] = []
        self.frame_bytes: list[int] = []
        self.records = 0
        self.ws = None

    async def read(self, until: float) -> None:
        loop = asyncio.get_running_loop()
        while loop.time() < until:
            try:
                text = await asyncio.wait_for(self.ws.recv(), max(0.01, until - loop.time()))
            except TimeoutError:
                break
            if text.startswith('{"type":"step"'):
                self.frame_times.append(loop.time())
                self.frame_bytes.append(len(text))
                self.records += text.count('"i":')


async def run(args: argparse.Namespace, port: int) -> tuple[list[Viewer], float]:
    url = f"ws://127.0.0.1:{port}/ws/sessions/new"
    compression = "deflate" if args.deflate else None
    async with connect(url, compression=compression, max_size=2**26,
                       origin=f"http://127.0.0.1:{port}") as driver:  # a page of ours
        await driver.send(json.dumps({"type": "configure", "v": 1, **workload(args.batch)}))
        sid = None
        while sid is None:
            msg = json.loads(await driver.recv())
            sid = msg.get("session_id") if msg["type"] == "init" else None
        # Play through the prefills so that the measured window is the full 256-request batch.
        await driver.send(json.dumps({"type": "seek", "v": 1, "iter": args.warmup_steps}))
        viewers = [Viewer() for _ in range(args.viewers)]
        for v in viewers:
            v.ws = await connect(f"ws://127.0.0.1:{port}/ws/sessions/{sid}?follow=1",
                                 compression=compression, max_size=2**26)
        loop = asyncio.get_running_loop()
        await asyncio.gather(*(v.read(loop.time() + 1.0) for v in viewers))  # init, keyframe
        for v in viewers:
            v.frame_times.clear()
            v.frame_bytes.clear()
            v.records = 0
        await driver.send(json.dumps({"type": "play", "v": 1, "speed": args.speed}))
        drain = asyncio.create_task(_drain(driver))
        cpu0, t0 = cpu_s(args.server_pid), time.monotonic()
        await asyncio.gather(*(v.read(loop.time() + args.seconds) for v in viewers))
        server_cpu = (cpu_s(args.server_pid) - cpu0) / (time.monotonic() - t0)
        drain.cancel()
        for v in viewers:
            await v.ws.close()
    return viewers, server_cpu


async def _drain(ws) -> None:  # type: ignore[no-untyped-def]
    while True:
        await ws.recv()


def report(args: argparse.Namespace, viewers: list[Viewer], server_cpu: float,
           client_cpu: float) -> None:
    fps = sorted(len(v.frame_times) / args.seconds for v in viewers)
    sizes = sorted(b for v in viewers for b in v.frame_bytes)
    records = sum(v.records for v in viewers) / max(1, sum(len(v.frame_times) for v in viewers))
    print(f"stream bench: {args.viewers} viewers, {args.batch}-request batch, speed "
          f"{args.speed}x, {args.seconds:.0f} s, permessage-deflate "
          f"{'on' if args.deflate else 'off'}, {os.cpu_count()} CPUs")
    rows = [
        ("frames/s per viewer (median)", f"{statistics.median(fps):.1f}"),
        ("frames/s per viewer (min / max)", f"{fps[0]:.1f} / {fps[-1]:.1f}"),
        ("records per frame (mean)", f"{records:.2f}"),
        ("bytes per frame (median)", f"{statistics.median(sizes):.0f}" if sizes else "-"),
        ("bytes per frame (p95)", f"{sizes[int(0.95 * (len(sizes) - 1))]:.0f}" if sizes else "-"),
        ("server CPU (cores)", f"{server_cpu:.2f}"),
        ("bench clients CPU (cores)", f"{client_cpu:.2f}"),
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"  {key:<{width}}  {value:>12}")
    target = statistics.median(fps) >= 57 and sizes and statistics.median(sizes) <= 2048
    print(f"  target (60 frames/s each, median frame <= 2 KB): {'met' if target else 'missed'}")


def frame_building(args: argparse.Namespace, data_dir: str) -> None:
    """What the server does per step frame and viewer: a track's `frame()` over its stored
    records (a read of the run store, then the message text), against the same read wrapped
    in the hand-made string of before; interleaved rounds, the best round of each."""
    load = workload(args.batch)
    specs = [RequestSpec(**row) for row in load["workload"]["requests"]]
    engine = Engine(EngineConfig(**load["config"]), specs)
    num_records = args.warmup_steps + 3 * args.frames
    track = Track(0, engine_source(engine), request_info(specs), load["config"]["num_gpu_blocks"],
                  64, num_records, Path(data_dir) / "frames.sqlite3")
    run_to_end(track)
    windows = [(a, a + 3) for a in range(args.warmup_steps, num_records - 3, 3)]

    def baseline() -> None:
        for a, u in windows:
            body = track.store.frame_body(a, u)
            f'{{"type":"step","v":1,"engine":{track.number},"records":[{body}]}}'

    def server() -> None:
        for a, u in windows:
            track.frame(a, u)

    def per_frame_model() -> None:  # the model built and serialized for every frame
        for a, u in windows:
            body = track.store.frame_body(a, u)
            dump(P.Step.model_construct(engine=track.number, records=Raw(f"[{body}]")))

    best = {baseline: float("inf"), server: float("inf"), per_frame_model: float("inf")}
    for _ in range(args.frame_rounds):
        for fn in best:
            t0 = time.perf_counter()
            fn()
            best[fn] = min(best[fn], time.perf_counter() - t0)
    kf = keyframe(track.state, 0, track.num_gpu_blocks)
    kf_dict = {"type": "keyframe", "v": 1, **vars(kf)}  # the dict keyframe() made before
    kf_best = {name: min(timeit.repeat(fn, number=20, repeat=args.frame_rounds)) / 20 * 1e6
               for name, fn in (("json", lambda: json.dumps(kf_dict, separators=(",", ":"))),
                                ("dump", lambda: dump(kf)))}
    track.close()
    base, new, model = (best[fn] / len(windows) * 1e6 for fn in best)
    print(f"frame building: {len(windows)} frames of 3 records, best of {args.frame_rounds} "
          f"rounds")
    print(f"  hand-made string (baseline)      {base:8.2f} us/frame")
    print(f"  server's Track.frame (Template)  {new:8.2f} us/frame   ratio {new / base:.3f}")
    print(f"  Step model per frame (dump)      {model:8.2f} us/frame   ratio {model / base:.3f}")
    print(f"keyframe of that track ({len(dump(kf))} bytes), on the simulating thread:")
    print(f"  json.dumps of its dict (before)  {kf_best['json']:8.2f} us")
    print(f"  dump(Keyframe)                   {kf_best['dump']:8.2f} us         ratio "
          f"{kf_best['dump'] / kf_best['json']:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--viewers", type=int, default=32)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--speed", type=float, default=2.0,
                        help="simulated seconds per wall second (2: ~3 records per frame)")
    parser.add_argument("--warmup-steps", type=int, default=60)
    parser.add_argument("--frames", type=int, default=300, help="frames in the frame-building "
                        "timing")
    parser.add_argument("--frame-rounds", type=int, default=30)
    parser.add_argument("--frames-only", action="store_true", help="only the frame-building "
                        "timing (no server, no viewers)")
    parser.add_argument("--deflate", action="store_true", help="negotiate permessage-deflate "
                        "as browsers do (the server then compresses per viewer)")
    args = parser.parse_args()
    if not args.frames_only:
        stream(args)
    with tempfile.TemporaryDirectory() as data_dir:
        frame_building(args, data_dir)


def stream(args: argparse.Namespace) -> None:
    port = free_port()
    with tempfile.TemporaryDirectory() as data_dir:
        proc = start_server(data_dir, port)
        args.server_pid = proc.pid
        try:
            c0 = time.process_time()
            w0 = time.monotonic()
            viewers, server_cpu = asyncio.run(run(args, port))
            client_cpu = (time.process_time() - c0) / (time.monotonic() - w0)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    report(args, viewers, server_cpu, client_cpu)


if __name__ == "__main__":
    main()
