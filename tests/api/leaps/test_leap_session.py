"""A session seeks and plays past what its track has stored, through leaps (api/leaps/scout.py): the
track's own simulation is held after its first batches, so only a leap can answer; the viewer
gets the leap's keyframe and records, which decode in order, and playing on moves through the
leap's records while the track is still held."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
from support.server import make_settings, validate

from servescope.api.reports.runs import scout_state
from servescope.api.sessions import build
from servescope.api.sessions.registry import Registry
from servescope.api.sessions.texts import progress_text
from servescope.api.sessions.viewer import Viewer
from servescope.api.uploads.store import Store
from servescope.api.wire import protocol as P
from servescope.api.wire.keyframes import load_keyframe
from servescope.api.wire.serialize import unpack

HELD_AFTER = 1_200  # items stored before the track is held: past its first batch (1,024 rows)


def held_source(gate: threading.Event, holding: list[int]) -> Any:
    """engine_source, each source held after HELD_AFTER items until `gate` is set (`holding`
    gets an entry as each is held)."""
    real = build.engine_source

    def source(engine: Any) -> Any:
        step, given = real(engine), [0]

        def held() -> Any:
            if given[0] == HELD_AFTER:
                holding.append(1)
                gate.wait()
            given[0] += 1
            return step()
        return held
    return source


def decode(track: Any, messages: list[str], state: Any = None) -> tuple[Any, list[dict]]:
    """The records the messages carry, decoded after their keyframe (or from `state`)."""
    records = []
    for text in messages:
        msg = validate(json.loads(text))
        if msg["type"] == "keyframe":
            state, records = load_keyframe(track.requests, msg), []
        elif msg["type"] == "step":
            records += [unpack(state, p) for p in msg["records"]]
    return state, records


def reached(track: Any, messages: list[str]) -> int:
    """The record the messages bring a viewer to: their last record, or their keyframe's when
    none follows it (a keyframe's place depends on how long building one took)."""
    keyframes = [m["iter"] for m in map(json.loads, messages) if m["type"] == "keyframe"]
    records = decode(track, messages)[1]
    return records[-1]["iter"] if records else keyframes[-1]


async def until(condition: Any) -> None:
    while not condition():
        await asyncio.sleep(0.01)


@pytest.fixture
def held(monkeypatch: Any) -> Any:
    """(gate, holding): every engine source of the test's sessions held (held_source)."""
    gate, holding = threading.Event(), []
    monkeypatch.setattr(build, "engine_source", held_source(gate, holding))
    yield gate, holding
    gate.set()


def run(main: Any) -> None:
    asyncio.run(asyncio.wait_for(main(), 300))  # (a bound against a hang only)


async def let_go(gate: threading.Event, session: Any) -> None:
    """Let the held tracks run to their end; then close the session."""
    gate.set()
    await until(lambda: all(t.done for t in session.tracks))
    session.close()


async def held_session(tmp_path: Any, holding: list[int],
                       configs: list[dict] | None = None,
                       config: dict | None = None) -> tuple[Registry, Any]:
    """A session of 3,000 requests (one engine, or `configs`), once every engine's track is
    held and its scout has run to the end."""
    settings = make_settings(tmp_path, leap_min_requests=100, catch_up_records=10**6)
    registry = Registry(settings, Store(settings.data_dir))
    session = await registry.create_configured(P.Configure(
        type="configure", config=config, configs=configs, workload=P.WorkloadSpec(synthetic={
            "num_requests": 3000, "seed": 3, "request_rate": 40})))
    tracks = session.tracks
    await until(lambda: len(holding) == len(tracks) and all(t.leaping.reach_done
                                                             for t in tracks))
    return registry, session


@pytest.mark.parametrize("async_scheduling", [False, True])
def test_a_session_seeks_and_plays_past_its_head_through_a_leap(tmp_path, held, async_scheduling):
    gate, holding = held

    async def main() -> None:
        registry, session = await held_session(tmp_path, holding,
                                               config={"async_scheduling": async_scheduling})
        track = session.tracks[0]
        head = track.head
        scout = registry.scouts_memory()  # counted against the server's memory_cap_mb
        assert scout > 1 << 20 and registry.jobs.memory() > scout
        target = track.leaping.reach_s * 0.7
        await session.seek(P.Seek(type="seek", time_s=target))
        pos = session.position[0]
        assert pos > head + 1_000 and track.start_at(pos) <= target  # past the held head
        scout = scout_state(track)  # as GET /api/sessions/{id} says it
        assert scout["done"] and scout["error"] is None and scout["leap"][0] <= pos
        viewer = Viewer(session, lambda text: asyncio.sleep(0), "driver")
        state, records = decode(track, viewer.pending())
        assert records[-1]["iter"] == pos and records[-1]["time_s"] <= target
        assert [r["iter"] for r in records] == list(range(records[0]["iter"], pos + 1))
        session.play(speed=50.0)
        await until(lambda: session.position[0] > pos + 100)
        assert track.head == head  # still held: playing went on through the leap's records
        _, more = decode(track, viewer.pending(), state)
        assert [r["iter"] for r in more] == list(range(pos + 1, session.position[0] + 1))
        times = [r["time_s"] for r in records + more]
        assert times == sorted(times)
        await let_go(gate, session)
        assert track.error is None and track.leaping.range is None  # joined, then passed

    run(main)


def test_in_compare_mode_every_engine_leaps_to_the_lead_s_time(tmp_path, held):
    gate, holding = held

    async def main() -> None:
        _, session = await held_session(tmp_path, holding,  # one async engine, one not
                                        [{"async_scheduling": True}, {"max_num_seqs": 8}])
        tracks = session.tracks
        heads = [t.head for t in tracks]
        target = min(t.leaping.reach_s for t in tracks) * 0.7
        await session.seek(P.Seek(type="seek", time_s=target))
        for t, head, pos in zip(tracks, heads, session.position, strict=True):
            assert pos > head and t.end_of(pos) is not None  # each in its own leap
            assert t.start_at(pos) <= target
        assert [t.head for t in tracks] == heads  # (both still held)
        await let_go(gate, session)

    run(main)


def test_a_step_past_the_head_into_a_leap_sends_the_viewer_its_keyframe(tmp_path, held):
    gate, holding = held

    async def main() -> None:
        _, session = await held_session(tmp_path, holding)
        track = session.tracks[0]
        head = track.head
        await session.seek(P.Seek(type="seek", iter=head))
        viewer = Viewer(session, lambda text: asyncio.sleep(0), "driver")
        assert reached(track, viewer.pending()) == head  # the viewer is there
        await session.step(5)  # past the head: a leap from there (not a seek: no resync)
        assert session.position == [head + 5] and track.head == head
        sent = [validate(json.loads(text)) for text in viewer.pending()]
        kf = next(m for m in sent if m["type"] == "keyframe")  # the records between are not
        assert kf["iter"] == head + 4  # stored: the leap's own keyframe, then its record
        _, records = decode(track, [json.dumps(m) for m in sent])
        assert [r["iter"] for r in records] == [head + 5]
        await let_go(gate, session)

    run(main)


def test_a_long_run_that_cannot_leap_says_why_and_one_that_can_says_nothing(tmp_path):
    async def main() -> None:
        settings = make_settings(tmp_path, leap_min_requests=100)
        registry = Registry(settings, Store(settings.data_dir))
        session = await registry.create_configured(P.Configure(
            type="configure", configs=[{"policy": "static"}, {"async_scheduling": True}],
            workload=P.WorkloadSpec(synthetic={"num_requests": 300, "seed": 3})))
        progress = validate(json.loads(progress_text(session)))
        contrast, vllm = progress["no_leap"]
        assert "static policy" in contrast and session.tracks[0].leaping is None
        assert vllm is None and session.tracks[1].leaping is not None
        registry.close()

    run(main)


def test_a_seek_holds_the_track_as_long_as_the_server_lets_the_seek_wait(tmp_path):
    async def main() -> None:  # (a shorter hold would set the track on the scout's CPU)
        settings = make_settings(tmp_path, leap_min_requests=100, job_timeout_s=345.0)
        registry = Registry(settings, Store(settings.data_dir))
        session = await registry.create_configured(P.Configure(
            type="configure", config={"async_scheduling": True},
            workload=P.WorkloadSpec(synthetic={"num_requests": 300, "seed": 3})))
        leaping = session.tracks[0].leaping
        assert leaping is not None and leaping.max_hold_s == 345.0
        registry.close()

    run(main)
