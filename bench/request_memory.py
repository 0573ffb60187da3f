"""Where a session's memory goes on a large request trace, per request: an Azure-format file of
`--requests` rows (bench/trace_scale.py's generate_azure) read as an upload is, then each holder
built as the server builds a session's track (api/sessions/build.py), with the bytes it added
(tracemalloc) divided by the number of requests; then `--records` records simulated through the
track's own loop (packing, the Meter) and what the requests seen so far hold, per request seen.
Usage: python bench/request_memory.py [--requests 100000] [--records 20000] [--trace FILE]"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from servescope.api.records.track_source import engine_source
from servescope.api.sessions.track import Track
from servescope.api.uploads.trace_workload import read_trace, with_fit_notes
from servescope.api.wire.serialize import normalize, pack, request_info
from servescope.api.wire.stream_state import StreamState
from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.observability.meter import Meter

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale_server import SESSION_CONFIG  # noqa: E402
from trace_scale import CONV, generate_azure  # noqa: E402


def traced() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


class Ledger:
    """Bytes each step added, kept in order, per request."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, int, int]] = []

    def add(self, name: str, n: int, build: Callable[[], Any]) -> Any:
        before = traced()
        t = time.perf_counter()
        value = build()
        after = traced()
        self.rows.append((name, after - before, n))
        print(f"  {name:<44}{(after - before) / max(n, 1):>9.0f} B/request "
              f"({(after - before) / 2**20:7.1f} MiB, {time.perf_counter() - t:5.1f} s)",
              flush=True)
        return value


def holders(path: Path, records: int) -> None:
    ledger = Ledger()
    _, workload, _ = ledger.add("upload: parsed specs (store.loaded keeps)", 0,
                                lambda: read_trace(path))
    specs = workload.specs
    n = len(specs)
    ledger.rows[-1] = (ledger.rows[-1][0], ledger.rows[-1][1], n)
    print(f"  ({n:,} requests; specs: {ledger.rows[-1][1] / n:.0f} B/request)")
    config = EngineConfig.from_dict({**workload.base_config, **SESSION_CONFIG})
    session_specs = ledger.add("session's copy of the spec list", n, lambda: list(specs))
    engine: Engine = ledger.add("Engine (pending queue)", n, lambda: Engine(config, session_specs))
    info = ledger.add("track.requests (request_info)", n, lambda: request_info(session_specs))
    dicts = ledger.add("  baseline: the same list as a dict a request", n, lambda: [
        {"id": s.id, "prompt_len": s.prompt_len, "output_len": s.output_len,
         "arrival_s": s.arrival_s, "arrival_step": s.arrival_step} for s in session_specs])
    print(f"  the request list: {ledger.rows[-1][1] / max(ledger.rows[-2][1], 1):.1f}x smaller "
          "as columns")
    del dicts
    ledger.add("StreamState (one)", n, lambda: StreamState(info))
    ledger.add("Meter", n, lambda: Meter(info, True))
    with tempfile.TemporaryDirectory() as tmp:
        track = ledger.add("Track (state, meter, first keyframe)", n,
                           lambda: Track(0, engine_source(engine, runs=False), info,
                                         engine.config.num_gpu_blocks or 0, 64, 10**9,
                                         Path(tmp) / "t.sqlite3"))
        ledger.add("fit notes (transient)", n,
                   lambda: with_fit_notes(workload.trace, session_specs, [("", engine)]) and None)
        simulate(track, engine, records)
        track.store.remove()


def simulate(track: Track, engine: Engine, records: int, top: int = 12) -> None:
    """`records` records through the track's packing and meter (no store, no thread), one by
    one as to_dict() (the per-record path: what it keeps is what the others keep)."""
    before = traced()
    first = tracemalloc.take_snapshot()
    t = time.perf_counter()
    for k in range(records):
        rec = track.source()
        if rec is None:
            break
        rec = normalize(rec)
        rec["iter"] = k
        track.meter.observe(rec)
        pack(track.state, rec)
    after = traced()
    seen = engine.num_arrived
    done = len(engine.done_requests)
    print(f"  simulated {k + 1:,} records in {time.perf_counter() - t:.0f} s: {seen:,} arrived, "
          f"{done:,} finished; {(after - before) / max(seen, 1):.0f} B per arrived request "
          f"({(after - before) / 2**20:.1f} MiB)")
    parts = {
        "engine.done_requests": sum_size(engine.done_requests),
        "meter observations": meter_bytes(track.meter)[0],
        "meter rows": meter_bytes(track.meter)[1],
        "stream state dicts": sum(sys.getsizeof(d) for d in (
            track.state.status, track.state.computed, track.state.outputs,
            track.state.cached_tokens, track.state.preemptions)),
    }
    for name, size in parts.items():
        print(f"    {name:<42}{size / max(seen, 1):>9.0f} B/request ({size / 2**20:.1f} MiB)")
    meter = track.meter
    kept = sum(meter_bytes(meter))
    # the layout before: a (record, value) pair of 8-byte columns an observation, and a row of
    # 11 doubles plus start and end times a record
    pairs = 16 * sum(len(h) for h in meter.histograms.values()) + 104 * meter.num_records
    print(f"  the meter: {kept / max(seen, 1):.0f} B/request, {pairs / max(kept, 1):.1f}x smaller "
          f"than pairs of columns would be ({pairs / max(seen, 1):.0f} B/request)")
    print("  where it grew (allocation sites):")
    for stat in tracemalloc.take_snapshot().compare_to(first, "lineno")[:top]:
        frame = stat.traceback[0]
        print(f"    {Path(frame.filename).name}:{frame.lineno:<6}"
              f"{stat.size_diff / max(seen, 1):>9.0f} B/request ({stat.size_diff / 2**20:.1f} MiB)")


def meter_bytes(meter: Meter) -> tuple[int, int]:
    """(histogram observations, per-record rows and counters) of a meter, in bytes."""
    def size(*arrays: Any) -> int:  # what is in memory (a track's meter spills the rest)
        return sum(getattr(a, "memory_bytes", len(a) * a.itemsize) for a in arrays)
    if hasattr(meter, "obs_iter"):  # the meter before its columns were compacted
        return (sum(size(*h.values()) for h in (meter.obs_iter, meter.obs_value)),
                size(meter.rows, meter.start_s, meter.end_s))
    return (sum(size(*(getattr(h, a) for a in ("iters", "values", "ends") if hasattr(h, a)))
                for h in meter.histograms.values()),
            size(meter.running, meter.waiting, meter.kv_usage, meter.generation_tokens,
                 meter.start_s, *(a for c in meter.changes.values()
                                               for a in (c.iters, c.values))))


def sum_size(objs: list[Any]) -> int:
    """Shallow sizes of the objects, their slot values' containers and their token stretches."""
    total = 0
    for o in objs:
        hashes = getattr(o, "block_hashes", ())  # a live Request's (before FinishedRequest)
        total += sys.getsizeof(o) + sys.getsizeof(hashes) + sys.getsizeof(o.token_stretches)
        total += sum(sys.getsizeof(h) for h in hashes)
        total += sum(sys.getsizeof(r) for r in o.token_stretches)
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--trace", type=Path, default=CONV.resolve())
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "azure.csv"
        generate_azure(args.trace, path, args.requests)
        tracemalloc.start()
        holders(path, args.records)


if __name__ == "__main__":
    main()
