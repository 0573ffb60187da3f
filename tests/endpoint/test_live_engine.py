"""The live engine on a hand-driven wall clock: tokens go out when the simulated step that makes
them ends, a request joins at its wall-clock arrival, and an abort frees the request's blocks
(vLLM: Scheduler.finish_requests(FINISHED_ABORTED) frees them between steps)."""

from __future__ import annotations

import asyncio

from support.server import FakeClock

from servescope.api.openai.live import LiveEngine
from servescope.core.config import EngineConfig
from servescope.core.records import BlockTables
from servescope.core.request import RequestSpec

# the placeholder cost model (core/step_time.py, no model or GPU): 10 ms + 0.02 ms a token
CONFIG = EngineConfig(num_gpu_blocks=16, block_size=4, max_model_len=64, max_num_seqs=4,
                      max_num_batched_tokens=64)


def test_tokens_go_out_when_their_step_ends() -> None:
    async def scenario() -> None:
        wall = FakeClock()
        live = LiveEngine(CONFIG, wall=wall)
        events = live.submit(RequestSpec("a", 50, 3))
        first = asyncio.ensure_future(anext(events))
        # step 1 prefills 50 tokens: 10 + 50 * 0.02 = 11 ms, then its token
        live.tick()
        await asyncio.sleep(0)
        assert not first.done()
        wall.advance(0.0109)
        live.tick()
        await asyncio.sleep(0)
        assert not first.done()
        wall.advance(0.0002)  # 11.1 ms: step 1 has ended
        live.tick()
        event = await asyncio.wait_for(first, 1)
        assert (event.num_new, event.num_tokens, event.finish_reason) == (1, 1, None)
        # two decode steps of one token each, 10.02 ms apiece, ending at 21.02 and 31.04 ms
        wall.advance(0.0150)  # 26.1 ms
        live.tick()
        assert (await asyncio.wait_for(anext(events), 1)).num_tokens == 2
        wall.advance(0.0050)  # 31.1 ms
        live.tick()
        assert (await asyncio.wait_for(anext(events), 1)).finish_reason == "length"

    asyncio.run(scenario())


def test_an_aborted_request_frees_its_blocks() -> None:
    async def scenario() -> None:
        wall = FakeClock()
        live = LiveEngine(CONFIG, wall=wall)
        live.submit(RequestSpec("a", 20, 30))
        wall.advance(0.011)
        live.tick()
        kv = live.engine.kv
        assert kv.num_free_blocks < kv.pool.num_usable_blocks  # its prompt holds 5 blocks
        assert live.abort("a")
        assert kv.num_free_blocks == kv.pool.num_usable_blocks
        assert not live.engine.scheduler.has_unfinished
        assert [i for i, _ in live.aborted] == ["a"]
        assert not live.abort("a")

    asyncio.run(scenario())


def test_a_request_arrives_when_submitted() -> None:
    async def scenario() -> None:
        wall = FakeClock()
        live = LiveEngine(CONFIG, wall=wall)
        wall.advance(2.0)
        live.tick()
        live.submit(RequestSpec("late", 10, 1))
        wall.advance(0.001)
        live.tick()
        assert live.records[0].time_s == 2.0  # its first step starts at its arrival
        assert live.records[0].arrivals == ("late",)

    asyncio.run(scenario())


def test_close_ends_every_stream() -> None:
    async def scenario() -> None:
        live = LiveEngine(CONFIG, wall=FakeClock())
        events = live.submit(RequestSpec("a", 10, 5))
        live.close()
        assert (await asyncio.wait_for(anext(events), 1)).finish_reason == "abort"

    asyncio.run(scenario())


def test_an_aborted_request_is_finished_and_released_by_the_next_record() -> None:
    # vLLM: Scheduler.finish_requests(FINISHED_ABORTED) -> _free_request adds the id to
    # finished_req_ids, which the next SchedulerOutput carries
    async def scenario() -> None:
        wall = FakeClock()
        live = LiveEngine(CONFIG, wall=wall)
        live.submit(RequestSpec("a", 20, 30))
        live.submit(RequestSpec("b", 4, 30))
        wall.advance(0.011)
        live.tick()
        tables = BlockTables()
        for record in live.records:
            tables.apply(record)
            tables.after_update(record)
        held = list(tables.tables["a"])
        assert len(held) >= 5  # 20 prompt tokens in blocks of 4, and its decode
        live.abort("a")
        wall.advance(0.011)
        live.tick()
        after = [r for r in live.records if "a" in r.finished]
        assert len(after) == 1 and "a" in after[0].released
        assert set(held) <= set(after[0].freed_blocks)
        assert "a" not in after[0].running
        tables.apply(after[0])
        tables.after_update(after[0])
        assert "a" not in tables.tables and "b" in tables.tables
        assert after[0].to_dict()["finished"] == ["a"]

    asyncio.run(scenario())
