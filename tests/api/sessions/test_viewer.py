"""A viewer's sender: coalesced frames, and a viewer whose socket stops draining holds no queue
and is brought to the newest state through a keyframe when it drains again."""

from __future__ import annotations

import asyncio
import json

from support.server import make_settings, validate

from servescope.api.sessions.registry import Registry
from servescope.api.sessions.viewer import Viewer
from servescope.api.uploads.store import Store
from servescope.api.wire import protocol as P


async def configured(tmp_path, **overrides):
    settings = make_settings(tmp_path, **overrides)
    registry = Registry(settings, Store(settings.data_dir))
    session = await registry.create_configured(P.Configure(
        type="configure", workload=P.WorkloadSpec(synthetic={"num_requests": 400, "seed": 1,
                                                         "request_rate": 100})))
    return session


def test_a_stalled_viewer_queues_nothing_and_catches_up_by_keyframe(tmp_path):
    async def main():
        session = await configured(tmp_path, keyframe_interval=16, catch_up_records=32)
        gate = asyncio.Event()
        got: list[dict] = []

        async def send(text: str) -> None:
            got.append(validate(json.loads(text)))
            if len(got) >= 3:  # init, keyframe, status: then the socket stops draining
                await gate.wait()

        viewer = Viewer(session, send, "driver")
        session.viewers.add(viewer)
        task = asyncio.create_task(viewer.run())
        await asyncio.sleep(0.05)
        assert [m["type"] for m in got] == ["init", "keyframe", "status"]
        for _ in range(5):
            await session.step(100)  # the session moves on while the viewer is stuck
        assert session.position == [499]
        # nothing was queued for it: it holds positions only, no messages
        assert viewer.outbox == type(viewer.outbox)() and viewer.sent == [-1]
        gate.set()
        await asyncio.sleep(0.1)
        after = got[3:]
        kinds = [m["type"] for m in after]
        assert "keyframe" in kinds
        kf = next(m for m in after if m["type"] == "keyframe")
        newest, _ = session.tracks[0].keyframe_before(499)  # every 16 records at the most often
        assert 0 <= kf["iter"] == newest and 499 - newest < 200
        records = [r for m in after if m["type"] == "step" for r in m["records"]]
        assert [r["i"] for r in records] == list(range(newest + 1, 500))
        task.cancel()

    asyncio.run(main())


def test_records_between_frames_are_coalesced_into_one_step_message(tmp_path):
    async def main():
        session = await configured(tmp_path, catch_up_records=1000)
        got: list[dict] = []

        async def send(text: str) -> None:
            got.append(json.loads(text))

        viewer = Viewer(session, send, "driver")
        session.viewers.add(viewer)
        task = asyncio.create_task(viewer.run())
        await asyncio.sleep(0.05)
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        for _ in range(10):  # ten moves, faster than the frame rate
            await session.step(3)
        await asyncio.sleep(0.1)
        elapsed = loop.time() - t0  # frames may go out until here, not only during the moves
        steps = [m for m in got if m["type"] == "step"]
        assert sum(len(m["records"]) for m in steps) == 30
        assert len(steps) <= 2 + elapsed * session.settings.max_fps
        assert len(steps) < 10  # ten moves were coalesced into fewer messages
        task.cancel()

    asyncio.run(main())
