"""A leap (api/leaps/leap.py) stores, from an engine checkpoint, the very records and keyframes a
track's own simulation stores at the same indices: on random vLLM V1 workloads with shared
prefixes, preemptions (small pools), chunked prefills and both clocks, from checkpoints taken
anywhere in the run."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from support.tracks import run_to_end

from servescope.api.leaps.leap import leaps, start_leap, write_next
from servescope.api.records.run_store import Row, RunStore
from servescope.api.records.track_source import engine_source
from servescope.api.sessions.track import Track
from servescope.api.wire.serialize import request_info
from servescope.core.checkpoint import advance_to, arrivals, resume, take
from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.request import RequestSpec


def leap_store(config: EngineConfig, specs: list[RequestSpec], checkpoint_at: int, first: int,
               path: Path) -> tuple[list[tuple], dict[int, str]]:
    """The rows and keyframes a leap to record `first` stores, from a checkpoint after
    `checkpoint_at` records (dumped and loaded)."""
    source = Engine(config, specs)
    order = arrivals(source)
    advance_to(source, checkpoint_at)
    checkpoint = take(source)
    advance_to(source, first + 5)  # (it may have run on since)
    engine = resume(checkpoint, source, order)
    store = RunStore(path)
    flushed: list[Row] = []
    writer = start_leap(engine, first, request_info(specs), store, 0,
                        engine.config.num_gpu_blocks or 0, 3, flushed.extend)
    while write_next(engine, writer):
        pass
    db = store._reader
    rows = db.execute("SELECT * FROM records ORDER BY iter").fetchall()
    kfs = dict(db.execute("SELECT iter, msg FROM keyframes").fetchall())
    assert flushed and flushed[-1] == rows[-1]
    store.remove()
    return rows, kfs


def main_store(config: EngineConfig, specs: list[RequestSpec], also: set[int],
               path: Path) -> tuple[list[tuple], dict[int, str]]:
    """The rows and keyframes of the track's own simulation, with keyframes after the records
    in `also` besides its own."""
    engine = Engine(config, specs)
    track = Track(0, engine_source(engine), request_info(specs), engine.config.num_gpu_blocks
                  or 0, 5, 1_000_000, path)
    due = track.writer.keyframe_due
    track.writer.keyframe_due = lambda n, size: due(n, size) or n in also  # type: ignore
    run_to_end(track)
    assert track.error is None
    db = track.store._reader
    rows = db.execute("SELECT * FROM records ORDER BY iter").fetchall()
    kfs = dict(db.execute("SELECT iter, msg FROM keyframes").fetchall())
    track.close()
    return rows, kfs


def check(config: dict[str, Any], specs: list[RequestSpec], fractions: list[tuple[float, float]],
          ) -> int:
    """Leaps from checkpoints at the given shares of the run; the records they covered."""
    cfg = EngineConfig.from_dict(config)
    assert leaps(Engine(cfg, specs))
    total = Engine(cfg, specs).run_to_end()
    covered = 0
    with tempfile.TemporaryDirectory() as tmp:
        leapt = []
        for a, b in fractions:
            first = max(1, int(b * total))
            if first >= total:
                continue
            checkpoint_at = min(first - 1, int(a * total))
            leapt.append(leap_store(cfg, specs, checkpoint_at, first, Path(tmp) / "leap.db"))
        wanted = {it for _, kfs in leapt for it in kfs}
        rows, kfs = main_store(cfg, specs, wanted, Path(tmp) / "main.db")
        for leap_rows, leap_kfs in leapt:
            first = leap_rows[0][0]
            assert leap_rows == rows[first:]  # every column, every byte of the packed text
            assert min(leap_kfs) == first - 1
            for it, msg in leap_kfs.items():
                assert msg == kfs[it], f"keyframe after record {it}"
            covered += len(leap_rows)
    return covered


@pytest.mark.parametrize("async_scheduling", [False, True])
def test_leaps_over_a_preempting_run_store_what_the_track_stores(async_scheduling: bool) -> None:
    specs = [RequestSpec(f"r{i}", 40 + 13 * (i % 5), 30 + 7 * (i % 4), arrival_s=0.004 * i,
                         prefix=(("sys", 24),) if i % 2 else ())
             for i in range(24)]
    config = {"num_gpu_blocks": 40, "block_size": 4, "max_num_seqs": 8,
              "max_num_batched_tokens": 64, "enable_prefix_caching": True,
              "async_scheduling": async_scheduling}
    assert check(config, specs, [(0.0, 0.2), (0.3, 0.5), (0.5, 0.5), (0.1, 0.9)]) > 0


rows_st = st.lists(st.tuples(st.integers(1, 90), st.integers(1, 80), st.integers(0, 60),
                             st.sampled_from([(), (("sys", 32),), (("sys", 20),)])),
                   min_size=1, max_size=14)
config_st = st.fixed_dictionaries({
    "block_size": st.sampled_from([1, 4, 16]),
    "num_gpu_blocks": st.integers(24, 200),
    "max_num_seqs": st.integers(2, 16),
    "max_num_batched_tokens": st.integers(32, 256),
    "enable_prefix_caching": st.booleans(),
    "async_scheduling": st.booleans(),  # vLLM's AsyncScheduler: the leap reads a held copy
})


# Under async scheduling, r2's only output token is in flight when r1's next block preempts it
# (AsyncScheduler.schedule skips a request whose last token is in flight, then preempts the last
# running one); that token still arrives and finishes r2 from the queue. The record of that
# update (finished r2) precedes the one of the plan (preempted r2): a stream state that took the
# preemption as r2's last word counted it preempted to the end, and the leap's did not.
LAST_TOKEN_IN_FLIGHT = {"config": {"block_size": 1, "num_gpu_blocks": 111, "max_num_seqs": 2,
                                   "max_num_batched_tokens": 79, "enable_prefix_caching": False,
                                   "async_scheduling": True},
                        "rows": [(1, 4, 10, ()), (23, 11, 0, ()), (78, 1, 9, ())],
                        "time_clock": False, "fractions": [(0.0, 0.75)]}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(**LAST_TOKEN_IN_FLIGHT)
@example(**{**LAST_TOKEN_IN_FLIGHT,
            "config": {**LAST_TOKEN_IN_FLIGHT["config"], "enable_prefix_caching": True}})
@given(config=config_st, rows=rows_st, time_clock=st.booleans(),
       fractions=st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=1, max_size=3))
def test_a_leap_stores_what_the_track_stores(config: dict, rows: list, time_clock: bool,
                                             fractions: list[tuple[float, float]]) -> None:
    specs = [RequestSpec(f"r{i}", p, o, prefix=pre,
                         **({"arrival_s": a * 0.013} if time_clock else {"arrival_step": a}))
             for i, (p, o, a, pre) in enumerate(rows)]
    check(config, specs, fractions)
