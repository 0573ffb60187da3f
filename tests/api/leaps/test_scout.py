"""A seek past what a track has stored is answered by a leap: the scout (api/leaps/scout.py, a real
process) runs the engine ahead, and on the track's asking writes the records from a checkpoint
before the seek into the track's store. Here the track's own simulation is held after a few
records, so only a leap can answer; what a viewer is sent there decodes to the engine's own
records, and once the track is let go its store holds what a track alone stores."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from support.tracks import run_to_end

from servescope.api.leaps import scout
from servescope.api.leaps.leaping import Leaping
from servescope.api.leaps.scout import SCOUT_NICE, Job
from servescope.api.records.run_store import RunStore
from servescope.api.records.track_source import engine_source
from servescope.api.reports.runs import scout_state
from servescope.api.sessions.track import Track
from servescope.api.wire.keyframes import load_keyframe
from servescope.api.wire.position import Clock, Position, at_iter, at_time
from servescope.api.wire.serialize import normalize, request_info, unpack
from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.request import RequestSpec

CONFIG = EngineConfig.from_dict({"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100",
                                 "num_gpu_blocks": 400, "max_num_seqs": 32,
                                 "max_num_batched_tokens": 512})
SPECS = [RequestSpec(f"r{i}", 100 + 61 * (i % 9), 20 + 17 * (i % 6), arrival_s=0.05 * i,
                     prefix=(("sys", 48),) if i % 4 == 0 else ()) for i in range(400)]
HELD_AFTER = 40  # items the track's own simulation stores before it is held


def track(path: Path, gate: threading.Event) -> Track:
    engine = Engine(CONFIG, SPECS)
    source, given = engine_source(engine), [0]

    def held() -> Any:  # once a batch is out (the scout starts with the first)
        if given[0] >= HELD_AFTER and t.head >= 0 and not gate.is_set():
            gate.wait()
        given[0] += 1
        return source()
    info = request_info(SPECS)
    t = Track(0, held, info, 400, 8, 10**6, path)
    t.engine = engine
    t.leaping = Leaping(Job(engine.config, len(SPECS), path, 0, 400, 8), SPECS)
    return t


def decoded(t: Track, pos: int) -> list[dict[str, Any]]:
    """What a viewer seeking to `pos` is sent (a keyframe, then a frame), decoded."""
    at, kf = t.keyframe_before(pos)
    state = load_keyframe(t.requests, json.loads(kf))
    frame = t.frame(at, pos)
    packed = json.loads(frame)["records"] if frame is not None else []
    return [unpack(state, p) for p in packed]


async def seek_and_let_go(t: Track, gate: threading.Event, time_s: float,
                          ) -> tuple[int, int, list[dict[str, Any]]]:
    """Seek t to `time_s` while its simulation is held: (its head, the position, the records
    decoded there); then let it run to its end."""
    progressed = asyncio.Event()
    t.on_progress = progressed.set
    t.start()
    while not t.has(at_time(time_s)):
        progressed.clear()
        await progressed.wait()
    pos = t.index_at_time(time_s)
    head, records = t.head, decoded(t, pos)
    assert t.keyframe_before(pos)[0] > head  # the keyframe, too, is the leap's
    gate.set()
    while not t.done:
        progressed.clear()
        await progressed.wait()
    return head, pos, records


def test_a_seek_past_the_head_is_answered_by_a_leap(tmp_path: Path) -> None:
    full = [normalize(r.to_dict()) for r in Engine(CONFIG, SPECS).run()]
    time_s = full[int(len(full) * 0.8)]["time_s"] + 1e-6
    gate = threading.Event()
    t = track(tmp_path / "leapt.sqlite3", gate)
    # (a bound against a hang only: the seek is answered in about a second)
    head, pos, records = asyncio.run(asyncio.wait_for(seek_and_let_go(t, gate, time_s), 300))
    assert head + 1000 < pos  # the track was held far behind: a leap answered
    assert full[pos]["time_s"] <= time_s < full[pos + 1]["time_s"]
    assert records and records[-1]["iter"] == pos
    for rec in records:
        assert rec == full[rec["iter"]]
    assert t.error is None and t.head == len(full) - 1
    alone = Track(0, engine_source(Engine(CONFIG, SPECS)), request_info(SPECS), 400, 8, 10**6,
                  tmp_path / "alone.sqlite3")
    run_to_end(alone)
    query = "SELECT * FROM records ORDER BY iter"
    assert t.store._reader.execute(query).fetchall() == \
        alone.store._reader.execute(query).fetchall()
    t.close()
    alone.close()
    assert not list(tmp_path.glob("leapt.sqlite3*"))


def test_a_leap_holds_the_records_it_has_stored_and_joins_the_head_when_it_is_reached() -> None:
    leaping = Leaping(Job(CONFIG, 0, Path(), 0, 400, 8), [])
    leaping.hear(("leap", 100, 5.0, 120, 150, 7.5, 170, False), head=20)
    assert leaping.has(at_time(5.0)) and leaping.has(at_time(7.4))
    assert not leaping.has(at_time(7.5))  # the record at 7.5 s may start a stretch past 150
    assert not leaping.has(at_time(4.9))  # the records before 100 are not stored
    assert leaping.has(at_iter(100)) and leaping.has(at_iter(150))
    assert not leaping.has(at_iter(151))
    assert leaping.has(Position(Clock.STEP, 120)) and leaping.has(Position(Clock.STEP, 170))
    assert not leaping.has(Position(Clock.STEP, 171))
    assert leaping.end_of(99, head=20) == 150  # the keyframe after 99 starts the leap
    assert leaping.end_of(98, head=20) is None and leaping.end_of(151, head=20) is None
    assert leaping.end_of(10, head=20) == 20
    assert leaping.end_of(10, head=99) == 150  # the head has reached the leap's keyframe
    leaping.hear(("leap", 100, 5.0, 120, 160, 8.0, 180, True), head=20)
    assert leaping.has(at_time(9.0))  # the leap reached the run's end
    leaping.hear(("reach", 400, 30.0, False), head=160)
    assert leaping.range is None and leaping.reach == 400  # the head has caught up


def test_a_scout_that_fails_says_why_and_seeks_wait_for_the_track(tmp_path: Path) -> None:
    gate = threading.Event()
    t = track(tmp_path / "t.sqlite3", gate)
    assert t.leaping is not None
    t.leaping.job.path = tmp_path / "gone" / "t.sqlite3"  # a store the scout cannot open

    async def main() -> None:
        progressed = asyncio.Event()
        t.on_progress = progressed.set
        t.start()
        while t.leaping.error is None:
            progressed.clear()
            await progressed.wait()
        assert not t.has(at_time(1e9))  # no leap: the seek waits for the held track
        gate.set()
        while not t.done:
            progressed.clear()
            await progressed.wait()
    asyncio.run(asyncio.wait_for(main(), 300))  # (a bound against a hang only)
    state = scout_state(t)
    assert state is not None and "gone" in state["error"] and state["leap"] is None
    assert t.error is None and t.has(at_time(1e9))  # the track itself ran to its end
    t.close()


def thread_nices(pid: int) -> dict[int, int]:
    """Each thread of a process and its nice value (/proc/PID/task/TID/stat, field 19)."""
    nices = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # it has ended meanwhile
        nices[int(task.name)] = int(fields[16])
    return nices


@pytest.mark.skipif(sys.platform != "linux", reason="a thread's own nice value is Linux's")
def test_the_scout_runs_ahead_at_scout_nice_and_keeps_its_main_thread_for_leaps(
        tmp_path: Path) -> None:
    gate = threading.Event()
    t = track(tmp_path / "t.sqlite3", gate)
    assert t.leaping is not None
    base = os.getpriority(os.PRIO_PROCESS, 0)

    async def main() -> dict[int, int]:
        progressed = asyncio.Event()
        t.on_progress = progressed.set
        t.start()
        while t.leaping.reach < 0:  # the scout has run ahead
            progressed.clear()
            await progressed.wait()
        return thread_nices(t.leaping.scout.proc.pid)
    nices = asyncio.run(asyncio.wait_for(main(), 300))  # (a bound against a hang only)
    pid = t.leaping.scout.proc.pid
    assert nices[pid] == base  # the main thread: leaps, at the process's priority
    assert sorted(nices.values()).count(min(base + SCOUT_NICE, 19)) == 1  # the run ahead
    gate.set()
    t.close()


class Pipe:
    """A scout's link with nobody at the other end: its requests, then silence."""

    def __init__(self, specs: list[RequestSpec]) -> None:
        self.inbox: list[Any] = [specs]
        self.sent: list[Any] = []

    def poll(self, timeout: float = 0.0) -> bool:
        return bool(self.inbox)

    def recv(self) -> Any:
        return self.inbox.pop(0)

    def send(self, msg: Any) -> None:
        self.sent.append(msg)


@pytest.mark.parametrize("async_scheduling", [False, True])
def test_a_scout_stops_at_the_advance_that_crosses_a_seek_and_leaps_from_a_checkpoint_near_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, async_scheduling: bool) -> None:
    config = EngineConfig.from_dict({**CONFIG.to_dict(), "async_scheduling": async_scheduling})
    full = [normalize(r.to_dict()) for r in Engine(config, SPECS).run()]
    time_s = full[int(len(full) * 0.8)]["time_s"] + 1e-6
    monkeypatch.setattr(scout, "CHECKPOINT_S", float("inf"))  # only the approach's own
    monkeypatch.setattr(scout, "MIN_APPROACH_S", 0.0)  # (CPU time: not this test's business)
    path = tmp_path / "t.sqlite3"
    RunStore(path).close()
    scouting = scout.Scouting(Job(config, len(SPECS), path, 0, 400, 8), Pipe(SPECS))
    scouting.wanted = at_time(time_s)
    while scouting.wanted is not None:
        scouting._leap_turn()
    engine = scouting.engine
    assert scouting.times[-1] <= time_s < engine.time_s  # no advance past the crossing one
    first = scouting.first
    assert full[first]["time_s"] <= time_s  # the leap starts at or before the record sought
    ahead = [c.iter for c in scouting.checkpoints if c.iter <= first - 1]
    # checkpoints closer and closer to the target (each nearer it than half the way from the
    # one before): the leap re-simulates a few advances' records, not the whole way from 0
    assert len(ahead) > 2 and first - 1 - ahead[-1] < first // 20
    assert scouting.leap is not None
    leap_engine = scouting.leap[0]  # (it has written its first records since)
    at = leap_engine.iter
    assert at > first and normalize(leap_engine.step().to_dict()) == full[at]
    scouting.store.close()
