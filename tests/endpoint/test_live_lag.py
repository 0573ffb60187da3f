"""The clock's lag on a hand-driven wall clock: how late a stream's tokens go out after their
simulated step ended, as a gauge (the latest step's) and a histogram (every stream's, every
step) that a scrape after the burst still sees."""

from __future__ import annotations

import asyncio

import pytest
from support.server import FakeClock

from servescope.api.openai.live import LiveEngine
from servescope.api.openai.metrics import LiveCollector, exposition
from servescope.core.config import EngineConfig
from servescope.core.request import RequestSpec

# the placeholder cost model (core/step_time.py, no model or GPU): 10 ms + 0.02 ms a token
CONFIG = EngineConfig(num_gpu_blocks=16, block_size=4, max_model_len=64, max_num_seqs=4,
                      max_num_batched_tokens=64)


def sample(text: str, line_start: str) -> float:
    return next(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                if line.startswith(line_start))


def test_a_late_step_is_seen_as_lag_after_the_burst() -> None:
    async def scenario() -> None:
        wall = FakeClock()
        live = LiveEngine(CONFIG, wall=wall)
        events = live.submit(RequestSpec("a", 50, 2))
        live.tick()
        # step 1 (50 prompt tokens) ends at 11 ms; the loop gets to it 7 ms late
        wall.advance(0.018)
        live.tick()
        await asyncio.wait_for(anext(events), 1)
        assert live.lag_s == pytest.approx(0.007)
        # step 2 (one decode token, 10.02 ms) ends at 21.02 ms; sent 0.48 ms after
        wall.advance(0.0035)
        live.tick()
        assert (await asyncio.wait_for(anext(events), 1)).finish_reason == "length"
        assert live.lag_s == pytest.approx(0.00048)
        wall.advance(1.0)  # idle: the gauge is back to 0, the histogram keeps both
        live.tick()
        text = exposition(LiveCollector([live], "m", None)).decode()
        assert sample(text, "servescope:clock_lag_seconds{") == 0.0
        lags = "servescope:stream_lag_seconds"
        bucket = lags + '_bucket{engine="0",le="%s",model_name="m"'
        assert sample(text, bucket % "0.001") == 1  # the 0.48 ms
        assert sample(text, bucket % "0.005") == 1
        assert sample(text, bucket % "0.01") == 2  # and the 7 ms
        assert sample(text, lags + "_count") == 2
        assert sample(text, lags + "_sum") == pytest.approx(0.00748)

    asyncio.run(scenario())
