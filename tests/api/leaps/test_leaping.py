"""While a seek waits on the scout, the track's own simulation is held (api/leaps/leaping.py):
released when the leap holds the record asked for, when the scout ends or fails, and past
its max_hold_s (the server's job_timeout_s); a track's thread takes no record while it is held."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from servescope.api.leaps.leaping import Leaping
from servescope.api.leaps.scout import Job
from servescope.api.records.track_source import engine_source
from servescope.api.sessions.track import Track
from servescope.api.wire.position import Position, at_iter, at_time
from servescope.api.wire.serialize import request_info
from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.request import RequestSpec

CONFIG = EngineConfig.from_dict({"num_gpu_blocks": 64, "block_size": 4, "max_num_seqs": 4,
                                 "max_num_batched_tokens": 64})
SPECS = [RequestSpec(f"r{i}", 8 + i % 5, 6 + i % 3, arrival_s=0.01 * i) for i in range(30)]


class StubScout:
    """The scout process's end, without the process: what it was asked."""

    def __init__(self) -> None:
        self.asked: list[Position] = []

    def ask(self, target: Position) -> None:
        self.asked.append(target)

    def stop(self) -> None:
        pass


def leaping_with_stub(max_hold_s: float = 120.0) -> tuple[Leaping, StubScout]:
    leaping = Leaping(Job(CONFIG, 0, Path(), 0, 64, 8), [], max_hold_s)
    stub = StubScout()
    leaping.scout = stub  # type: ignore[assignment]
    return leaping, stub


def test_a_seek_the_scout_has_not_answered_holds_the_track_until_the_leap_holds_it() -> None:
    leaping, stub = leaping_with_stub()
    assert leaping.idle.is_set()
    leaping.ask(at_time(6.0))
    assert stub.asked == [at_time(6.0)] and not leaping.idle.is_set()
    leaping.hear(("reach", 300, 5.5, False), head=20)  # the scout is short of it: still held
    assert not leaping.idle.is_set()
    leaping.hear(("leap", 100, 5.0, 120, 150, 7.5, 170, False), head=20)  # 5.0 <= 6.0 < 7.5
    assert leaping.idle.is_set()
    leaping.ask(at_iter(140))  # (a viewer playing in the leap) already held: nothing to wait for
    assert leaping.idle.is_set()


@pytest.mark.parametrize("msg", [("ended", None), ("error", "MemoryError: ")])
def test_a_scout_that_ends_or_fails_lets_the_track_go_and_holds_it_no_more(msg) -> None:
    leaping, _ = leaping_with_stub()
    leaping.ask(at_time(9.0))
    assert not leaping.idle.is_set()
    leaping.hear(msg, head=20)
    assert leaping.idle.is_set()
    leaping.ask(at_time(10.0))
    assert leaping.idle.is_set()


def test_a_hold_ends_at_its_deadline_and_a_new_seek_starts_another() -> None:
    leaping, _ = leaping_with_stub(max_hold_s=0.05)
    leaping.ask(at_time(9.0))
    assert leaping.hold_until - time.monotonic() <= 0.05
    leaping.hold()  # returns at the deadline although nothing answered
    assert not leaping.idle.is_set() and leaping.waited == at_time(9.0)
    first = leaping.hold_until
    leaping.ask(at_time(9.0))  # the same seek asked again keeps its deadline
    assert leaping.hold_until == first
    leaping.ask(at_time(12.0))
    assert leaping.hold_until > first


def test_a_track_takes_no_record_while_a_seek_waits_on_its_scout(tmp_path: Path) -> None:
    leaping, _ = leaping_with_stub()
    source = engine_source(Engine(CONFIG, SPECS))
    calls: list[int] = []
    seen: list[bool] = []  # from the seek on: whether the track was let go at each record

    def seeking() -> Any:
        calls.append(1)
        if len(calls) == 5:
            leaping.ask(at_time(1e6))  # (the loop's side, here from the track's thread)
            threading.Timer(0.3, leaping.hear, args=(("ended", None), 0)).start()
        if len(calls) >= 5:
            seen.append(leaping.idle.is_set())
        return source()

    t = Track(0, seeking, request_info(SPECS), 64, 8, 10**6, tmp_path / "t.sqlite3")
    t.leaping = leaping

    async def main() -> None:
        progressed = asyncio.Event()
        t.on_progress = progressed.set
        t.start()
        while not t.done:
            progressed.clear()
            await progressed.wait()
    asyncio.run(asyncio.wait_for(main(), 300))  # (a bound against a hang only)
    assert t.error is None and len(seen) > 2
    assert seen[0] is False and all(seen[1:])  # every record after the seek's came once let go
    t.close()
