"""Simulating ahead into a session's store: the Azure conversation trace through a Track (the
server's session config, bench/scale_server.py SESSION_CONFIG) by the per-record path (each
decode stretch expanded, every record to_dict, packed, dumped, metered one by one) and by the run
path (api/records/stretch_pack.py), in this run. Prints CPU seconds, CPU us per stored record (in
all, and less the engine's own advance() to the end, measured here too), the ratio old/new, and
whether the two stores hold the same rows and keyframes (they must).
With --rows N the trace is an Azure-format file of N rows generated from it (bench/trace_scale.py)
and --new-only skips the per-record path (hours at a million rows).
Usage: python bench/track_store.py [--trace FILE] [--limit N] [--rows N] [--new-only]

Keyframe spacing (api/wire/keyframes.py keyframe_cost), as measured here: when the spacing was
set a keyframe cost about 0.15 us a request (34 ms at 200,000 requests; 5.3 ms once a finished
request's counts travelled as marks) and 0.15 us a block; keyframes then took 4.4 of 30.3 s of
the conversation trace's CPU, later 1.6 of 19.7 s (938 keyframes), and 5.5 of 212.5 s (1,043)
for 200,000 of its requests repeated (--rows 200000)."""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
from pathlib import Path

from servescope.api.records.track_source import engine_source
from servescope.api.sessions.track import Track
from servescope.api.settings import Settings
from servescope.api.wire.serialize import request_info
from servescope.core.config import EngineConfig
from servescope.core.decode_stretch import DecodeStretch
from servescope.core.engine import Engine
from servescope.core.request import RequestSpec
from servescope.traces.load import read_requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.tracks import run_to_end  # noqa: E402  (the tests' helper)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from trace_scale import CONFIG, CONV, generate_azure  # noqa: E402

SESSION_CONFIG = {**CONFIG, "num_gpu_blocks": None, "max_num_seqs": 256,
                  "max_num_batched_tokens": 2048}  # as bench/scale_server.py's sessions


def engine_alone(config: EngineConfig, specs: list[RequestSpec]) -> tuple[float, int, int]:
    """CPU seconds of advance() to the end (runs not expanded); step records and runs."""
    engine = Engine(config, specs)
    cpu, steps, runs = time.process_time(), 0, 0
    while (item := engine.advance()) is not None:
        runs += isinstance(item, DecodeStretch)
        steps += not isinstance(item, DecodeStretch)
    return time.process_time() - cpu, steps, runs


class Timings:
    """The CPU a track's thread spends building keyframes (the same in both paths: where they
    fall depends only on the records) and storing decode stretches' records, keyframes apart."""

    def __init__(self, track: Track) -> None:
        self.keyframe_cpu = self.run_cpu = 0.0
        self.num_keyframes = self.run_records = 0
        writer = track.writer
        take, store_stretch = writer.take_keyframe, writer.store_stretch

        def timed_keyframe(n: int) -> None:
            cpu = time.thread_time()
            take(n)
            self.keyframe_cpu += time.thread_time() - cpu
            self.num_keyframes += 1

        def timed_run(run: DecodeStretch, n: int, num_steps: int) -> None:
            cpu, kf_cpu = time.thread_time(), self.keyframe_cpu
            store_stretch(run, n, num_steps)
            self.run_cpu += time.thread_time() - cpu - (self.keyframe_cpu - kf_cpu)
            self.run_records += num_steps
        writer.take_keyframe = timed_keyframe  # type: ignore[method-assign]
        writer.store_stretch = timed_run  # type: ignore[method-assign]


def through_track(config: EngineConfig, specs: list[RequestSpec], runs: bool,
                  path: Path) -> tuple[float, float, int, str, float, int, float, int]:
    """(CPU s, wall s, records, digest of the stored rows and keyframes, keyframes' CPU s,
    their number, CPU s storing runs in bulk and their records) of one path."""
    settings = Settings()
    engine = Engine(config, specs)
    track = Track(0, engine_source(engine, runs=runs), request_info(specs),
                  engine.config.num_gpu_blocks or 0, settings.keyframe_interval,
                  settings.max_records_per_session, path, summary=engine.summary,
                  enable_prefix_caching=engine.config.enable_prefix_caching)
    timings = Timings(track)
    cpu, wall = time.process_time(), time.perf_counter()
    run_to_end(track)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    assert track.error is None, track.error
    digest = hashlib.sha256()
    db = track.store._reader
    for table in ("records", "keyframes"):
        for row in db.execute(f"SELECT * FROM {table} ORDER BY iter"):  # noqa: S608
            digest.update(repr(row).encode())
    meter = track.meter
    digest.update(repr([meter.row(pos) for pos in range(meter.num_records)]).encode())
    records = track.head + 1
    track.close()
    return (cpu, wall, records, digest.hexdigest(), timings.keyframe_cpu,
            timings.num_keyframes, timings.run_cpu, timings.run_records)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trace", type=Path, default=CONV.resolve())
    parser.add_argument("--limit", type=int, default=None, help="first N requests only")
    parser.add_argument("--rows", type=int, default=None, help="generate N rows from the trace")
    parser.add_argument("--new-only", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.rows:
            generate_azure(args.trace, Path(tmp) / "generated.csv", args.rows)
            args.trace = Path(tmp) / "generated.csv"
        _, specs, _ = read_requests(args.trace)
        specs = specs[:args.limit]
        config = EngineConfig.from_dict(SESSION_CONFIG)
        alone, steps, runs = engine_alone(config, specs)
        new = through_track(config, specs, True, Path(tmp) / "new.sqlite3")
        old = new if args.new_only else through_track(config, specs, False,
                                                        Path(tmp) / "old.sqlite3")
    records = new[2]
    print(f"track store bench: {args.trace.name}, {len(specs):,} requests, {records:,} records "
          f"({steps:,} step records, {runs:,} decode stretches holding the rest)")
    print(f"  engine alone (advance() to the end)  {alone:8.1f} s CPU")
    print(f"  keyframes ({new[5]:,}, both paths)          {new[4]:8.1f} s CPU "
          f"{new[4] / records * 1e6:6.1f} us/record")
    for name, (cpu, wall, _, _, kf_cpu, *_) in (("per-record path (before)", old),
                                               ("run path", new)):
        print(f"  {name:<36} {cpu:8.1f} s CPU {wall:8.1f} s wall  "
              f"{cpu / records * 1e6:6.1f} us/record; less the engine and keyframes "
              f"{(cpu - alone - kf_cpu) / records * 1e6:6.1f} us/record")
    if new[7]:
        print(f"  run path, the runs' records alone ({new[7]:,}, keyframes not included) "
              f"{new[6]:6.1f} s CPU {new[6] / new[7] * 1e6:6.1f} us/record")
    print(f"  ratio old/new: {old[0] / new[0]:.1f}x in all, "
          f"{(old[0] - alone - old[4]) / (new[0] - alone - new[4]):.1f}x less the engine and "
          f"keyframes")
    print(f"  same rows, keyframes and meter: {'yes' if old[3] == new[3] else 'NO'}")


if __name__ == "__main__":
    main()
