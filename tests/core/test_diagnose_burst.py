"""Arrival bursts against prefill capacity, worked out by hand on a few arrivals."""

from __future__ import annotations

import numpy as np
import pytest

from servescope.core.config import EngineConfig
from servescope.core.diagnose_burst import judge_burst, prefill_tokens_per_s, worst_backlog
from servescope.core.request import RequestSpec
from servescope.core.step_time import placeholder_step_time_ms


def _timed(*arrivals: tuple[float, int]) -> list[RequestSpec]:
    return [RequestSpec(f"r{i}", p, 4, arrival_s=t) for i, (t, p) in enumerate(arrivals)]


def test_prefill_capacity_is_a_full_budget_step_of_the_step_time_function() -> None:
    # The placeholder prices a step at 10 ms + 0.02 ms a token: 2048 tokens in 50.96 ms.
    assert prefill_tokens_per_s(placeholder_step_time_ms, 2048) == pytest.approx(
        2048 / 0.05096)
    flat = lambda n, c: 100.0  # noqa: E731 - 100 ms whatever the step holds
    assert prefill_tokens_per_s(flat, 500) == pytest.approx(5000.0)


def test_the_fluid_queue_finds_the_arrival_that_waits_longest() -> None:
    # 1000 prompt tokens a second. r0 at 0 s adds 1 s of work; r1 at 0.5 s finds 0.5 s queued
    # and adds 1 s; r2 at 0.6 s finds 1.4 s queued. The queue is empty again long before r3
    # at 10 s, which waits for nothing.
    specs = _timed((0.0, 1000), (0.5, 1000), (0.6, 1000), (10.0, 500))
    burst = worst_backlog(specs, 1000.0)
    assert burst is not None
    assert burst["burst_requests"] == 3 and burst["burst_prompt_tokens"] == 3000
    assert burst["burst_start_s"] == 0.0 and burst["burst_window_s"] == pytest.approx(0.6)
    assert burst["burst_wait_s"] == pytest.approx(1.4)
    # the identity the verdict states: backlog = tokens / capacity - window
    assert burst["burst_backlog_s"] == pytest.approx(3000 / 1000.0 - 0.6)


def test_arrival_order_not_list_order_and_a_new_busy_period_restarts_the_count() -> None:
    specs = _timed((20.0, 4000), (0.0, 100), (20.1, 4000), (5.0, 100))
    burst = worst_backlog(specs, 1000.0)
    assert burst is not None
    assert (burst["burst_start_s"], burst["burst_requests"]) == (20.0, 2)
    assert burst["burst_wait_s"] == pytest.approx(3.9)


def test_a_step_clock_workload_has_no_burst_to_measure() -> None:
    assert worst_backlog([RequestSpec("r0", 10, 2, arrival_step=0)], 1000.0) is None


def test_the_burst_verdict_scores_the_share_of_p99_ttft_its_wait_explains() -> None:
    specs = _timed((0.0, 1000), (0.5, 1000), (0.6, 1000))
    stats = {**worst_backlog(specs, 1000.0), "p99_ttft_ms": 2800.0}  # type: ignore[dict-item]
    verdict = judge_burst(stats, EngineConfig(), {})
    assert verdict is not None and verdict["kind"] == "arrival_burst"
    assert verdict["score"] == pytest.approx(1400 / 2800, abs=1e-4)
    assert verdict["explains"] == ["ttft", "e2el"]
    assert "3 requests with 3,000 prompt tokens arrived within 0.6 s" in verdict["headline"]
    assert judge_burst({"p99_ttft_ms": 5.0}, EngineConfig(), {}) is None
    assert np.isfinite(verdict["score"])
