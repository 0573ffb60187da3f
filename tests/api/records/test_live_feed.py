"""The live feed (api/records/live_feed.py): records handed from the loop that makes them to a
track's thread that waits for them, the writer's flush before each wait, and every wait ending
when the engine or the track closes."""

from __future__ import annotations

import threading

from servescope.api.records import live_feed
from servescope.api.records.live_feed import LiveFeed
from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.records import StepRecord
from servescope.core.request import RequestSpec


def records(n: int) -> list[StepRecord]:
    config = EngineConfig(num_gpu_blocks=16, block_size=4)
    return list(Engine(config, [RequestSpec("a", 4, n, arrival_s=0.0)]).run())[:n]


def test_records_come_in_order_and_the_engine_closing_ends_the_feed() -> None:
    feed, made = LiveFeed(), records(3)
    for r in made:
        feed.put(r)
    feed.put(None)
    assert [feed.next() for _ in range(4)] == [*made, None]


def test_a_waiting_track_flushes_first_and_wakes_when_a_record_comes() -> None:
    feed, (record,) = LiveFeed(), records(1)
    flushed = threading.Event()
    feed.before_wait = flushed.set
    got: list[StepRecord | None] = []
    reader = threading.Thread(target=lambda: got.append(feed.next()))
    reader.start()
    assert flushed.wait(10)  # it flushed before waiting, as nothing was there
    feed.put(record)
    reader.join(10)
    assert got == [record]


def test_no_flush_while_records_wait_to_be_taken() -> None:
    feed, (record,) = LiveFeed(), records(1)
    calls: list[int] = []
    feed.before_wait = lambda: calls.append(1)
    feed.put(record)
    assert feed.next() is record and calls == []


def test_a_closed_track_ends_its_wait(monkeypatch) -> None:
    monkeypatch.setattr(live_feed, "WAIT_S", 0.01)  # how often it looks; the test waits on it
    feed = LiveFeed()
    closed = threading.Event()
    feed.stopped = closed.is_set
    got: list[StepRecord | None] = [records(1)[0]]
    reader = threading.Thread(target=lambda: got.append(feed.next()))
    reader.start()
    closed.set()
    reader.join(10)
    assert not reader.is_alive() and got[-1] is None
