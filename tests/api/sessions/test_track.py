"""A track simulates ahead on its own thread into its store: every record and keyframe it kept
reads back as the engine made it, a failing source stops it with the reason, and closing it
deletes its files."""

from __future__ import annotations

import asyncio
import errno
import json
import sqlite3
import threading

import pytest
from support.server import validate
from support.tracks import run_to_end, stored_records

from servescope.api.errors import StorageError
from servescope.api.records.run_store import RunStore, open_reader, storage_error
from servescope.api.records.track_source import engine_source
from servescope.api.reports.timeline import StoredRun, timeline
from servescope.api.sessions.track import Track
from servescope.api.wire.keyframes import load_keyframe
from servescope.api.wire.serialize import request_info, unpack
from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.request import RequestSpec
from servescope.observability import spill


def specs(n: int) -> list[RequestSpec]:
    return [RequestSpec(id=f"r{k}", prompt_len=5 + k % 7, output_len=3 + k % 4,
                        arrival_s=k * 0.01) for k in range(n)]


def engine_track(tmp_path, n: int = 40, **kw) -> tuple[Track, Engine]:
    engine = Engine(EngineConfig(num_gpu_blocks=24, block_size=4), specs(n))
    track = Track(0, engine_source(engine), request_info(specs(n)), 24, kw.get("interval", 8),
                  kw.get("max_records", 100_000), tmp_path / "runs" / "t-0.sqlite3",
                  summary=engine.summary)
    track.engine = engine
    return track, engine


def test_the_stored_records_are_the_engines_records_and_keyframes_match_them(tmp_path):
    reference = Engine(EngineConfig(num_gpu_blocks=24, block_size=4), specs(40))
    expected = []
    while (rec := reference.step()) is not None:
        expected.append(rec.to_dict())
    track, engine = engine_track(tmp_path)
    run_to_end(track)
    assert track.error is None and track.head == len(expected) - 1
    got = list(stored_records(track))
    assert [{**r, "iter": None} for r in got] == [{**e, "iter": None} for e in expected]
    assert track.summary == engine.summary() and track.summary["completed"] == 40
    # each keyframe, loaded, decodes the records after it as the whole stream does
    for at in (-1, 9, 20, track.head):
        kf_iter, text = track.keyframe_before(at)
        kf = validate(json.loads(text))
        assert kf_iter <= at and kf["iter"] == kf_iter
        state = load_keyframe(track.requests, kf)
        after = [unpack(state, json.loads(p))
                 for p in track.store.packed_records(track.head, kf_iter + 1)]
        assert after == got[kf_iter + 1:]
    # seeks by time and step find the records the lists say
    starts = [r["time_s"] for r in got]
    mid = starts[len(starts) // 2]
    assert track.index_at_time(mid) == max(k for k, t in enumerate(starts) if t <= mid)
    assert track.index_at_time(-1.0) == -1
    step = got[7]["step"]
    assert track.index_at_step(step) == 7


def long_decodes(n: int) -> list[RequestSpec]:
    """Few arrivals and long outputs: most steps are quiet decode stretches (fast-forward)."""
    return [RequestSpec(id=f"d{k}", prompt_len=9 + 5 * k, output_len=60 + 17 * k,
                        arrival_s=k * 0.3) for k in range(n)]


def stored(track: Track) -> tuple[list[tuple], list[tuple]]:
    db = track.store._reader
    return (db.execute("SELECT * FROM records ORDER BY iter").fetchall(),
            db.execute("SELECT * FROM keyframes ORDER BY iter").fetchall())


def test_a_fast_forward_track_stores_the_step_by_step_engines_packed_records_and_keyframes(
        tmp_path):
    config = EngineConfig(num_gpu_blocks=40, block_size=4)
    tracks = []
    for name, fast in (("step", False), ("fast", True)):
        engine = Engine(config, long_decodes(6), fast_forward=fast)
        calls = [0]
        step = engine.step

        def counted(step=step, calls=calls):
            calls[0] += 1
            return step()
        engine.step = counted  # type: ignore[method-assign]
        track = Track(0, engine_source(engine), request_info(long_decodes(6)), 40, 8, 100_000,
                      tmp_path / "runs" / f"{name}-0.sqlite3", summary=engine.summary)
        run_to_end(track)
        assert track.error is None
        tracks.append((track, calls[0]))
    (slow, slow_steps), (fast, fast_steps) = tracks
    records, keyframes = stored(slow)
    assert len(records) == slow_steps - 1 > 200 and len(keyframes) > 10  # the last call: None
    assert fast_steps < len(records) // 4  # the fast track took decode stretches, not single steps
    assert stored(fast) == (records, keyframes)  # every column and byte of packed JSON
    assert fast.summary == slow.summary


def test_a_failing_source_stops_the_track_with_the_reason_and_keeps_what_it_stored(tmp_path):
    track, engine = engine_track(tmp_path)
    inner = track.source
    calls = [0]

    def failing():
        calls[0] += 1
        if calls[0] > 15:
            raise ValueError("record 15 is not readable")
        return inner()

    track.source = failing
    run_to_end(track)
    assert track.done and track.head == 14
    assert track.error == ("the simulation failed after 15 records: ValueError: record 15 is "
                           "not readable")
    done = validate(json.loads(track.done_message()))
    assert done["error"] == track.error and done["num_records"] == 15
    assert len(list(stored_records(track))) == 15


def test_a_meter_file_the_disk_cannot_take_stops_the_track_saying_the_disk_is_full(
        tmp_path, monkeypatch):
    """The meter spills its columns beside the store (observability/spill.py): a full disk
    there ends the run as a full store does (a 507 message), its store still whole."""
    monkeypatch.setattr(spill, "CHUNK", 4)  # a small run spills too
    writes = [0]

    def write(self, data: bytes) -> int:
        writes[0] += 1
        if writes[0] > 30:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(self, data)

    real_write = spill.Spill.write
    monkeypatch.setattr(spill.Spill, "write", write)
    track, _ = engine_track(tmp_path)
    run_to_end(track)
    assert track.done and track.error is not None and writes[0] == 31
    assert track.error.startswith("the data directory is full")
    assert "No space left on device" in track.error
    assert len(list(stored_records(track))) == track.head + 1
    assert json.loads(track.done_message())["error"] == track.error


def test_a_run_longer_than_the_record_cap_stops_there_and_says_so(tmp_path):
    track, _ = engine_track(tmp_path, max_records=30)
    run_to_end(track)
    assert track.done and track.head == 29 and len(list(stored_records(track))) == 30
    assert track.error is not None and "max_records_per_session (30 records)" in track.error
    whole, _ = engine_track(tmp_path / "whole", max_records=200)  # 40 requests: under 200
    run_to_end(whole)
    assert whole.error is None and 30 < whole.head < 199


def test_closing_a_track_deletes_its_files_even_while_it_simulates(tmp_path):
    async def main():
        track, _ = engine_track(tmp_path, n=3000)
        progressed = asyncio.Event()
        track.on_progress = progressed.set
        track.start()
        await progressed.wait()
        track.close()
        while track._thread is not None:
            await asyncio.sleep(0.01)
        return track

    track = asyncio.run(main())
    assert not track.done or track.head < 3000
    assert list((tmp_path / "runs").iterdir()) == []


def test_a_data_dir_that_cannot_hold_a_store_is_a_storage_error_and_leaves_no_file(tmp_path):
    (tmp_path / "runs").write_text("a file where the runs folder should be")
    with pytest.raises(StorageError, match="not writable") as err:
        RunStore(tmp_path / "runs" / "s-0.sqlite3")
    assert not err.value.full
    full = storage_error(OSError(errno.ENOSPC, "No space left on device"), tmp_path / "x")
    assert full.full and "the data directory is full" in str(full)


def test_a_worker_reading_a_removed_track_fails_and_leaves_no_file(tmp_path):
    """A job's worker reads a track's file by its path; when the track was removed meanwhile
    (a reconfigure, a reap) the read fails instead of creating an empty file in its place."""
    path = tmp_path / "runs" / "s-0.sqlite3"
    store = RunStore(path)
    store.append([(0, 0, 0.0, 0.01, "{}", 4, 1, 0, 0.1, 1, 0, 0, 0)], [])
    with open_reader(path) as reader:
        assert reader.overview_bins(0, 4)[2]  # readable while it exists
    store.remove()
    with pytest.raises(sqlite3.Error), open_reader(path) as reader:
        reader.keyframe_before(0)
    assert list(path.parent.iterdir()) == []


def test_a_track_closed_while_a_job_reads_it_keeps_its_file_until_the_job_is_done(tmp_path):
    """A reconfigure while the page's overview job runs: the job reads the whole file, and the
    last reader removes it."""
    track, _ = engine_track(tmp_path)
    run_to_end(track)
    with track.reading() as path, track.reading():
        track.close()
        assert track.closed and path.exists()
        with open_reader(path) as reader:  # as the worker reads it
            t0, t1, rows = reader.overview_bins(track.head, 4)
        assert rows and t1 > t0
    assert list((tmp_path / "runs").iterdir()) == []


def test_a_timeline_job_in_a_thread_leaves_the_loops_reads_current(tmp_path):
    """The timeline's job runs in a thread while the simulation appends batches. Were it to
    read through the event loop's connection, the loop's seek would read the snapshot of the
    job's statement in flight and miss the batches committed since (a seek past them landed
    short: CI's paged e2e)."""
    track, _ = engine_track(tmp_path)
    run_to_end(track)
    run = StoredRun(track.store.path, track.requests, 0, track.head, True)
    stop = threading.Event()

    def hammer() -> None:
        while not stop.is_set():
            timeline(run, None, None, 50, 200)

    job = threading.Thread(target=hammer)
    job.start()
    stale = 0
    try:
        t = track.last_start_s
        for n in range(track.head + 1, track.head + 400):
            t += 0.01  # after the run's records: the job's window never reaches them
            track.store.append([(n, n, t, t + 0.01, "{}", 4, 1, 0, 0.1, 1, 0, 0, 0)], [])
            stale += track.store.index_at_time(t, n) != n
    finally:
        stop.set()
        job.join()
    assert stale == 0
