"""The run summary, computed on columns, agrees with the per-request metrics it summarizes: the
same bits, but the mean and std of the inter-token intervals (summed from each step's count of
them, in another order)."""

from __future__ import annotations

from itertools import pairwise
from typing import Any
from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.factories import make_config, make_requests

from servescope.core import metrics
from servescope.core.engine import Engine
from servescope.core.request import FinishedRequest, Request, RequestSpec


def _reference(done: list[Request], frontend_ms: float) -> dict[str, Any]:
    """The summary's latency keys from request_metrics, request by request."""
    rows = [metrics.request_metrics(r, frontend_ms) for r in done]
    out: dict[str, Any] = {"total_output_tokens": sum(len(r.token_times) for r in done)}
    for key in ("ttft", "tpot", "e2el"):
        out.update(metrics.latency_stats(key, [r[f"{key}_ms"] for r in rows
                                                if r[f"{key}_ms"] is not None]))
    out.update(metrics.latency_stats("itl", [x for r in rows for x in r["itl_ms"]]))
    return out


def _done(preempting: bool) -> list[Request]:
    """A tight cache preempts (several token stretches a request); a roomy one does not."""
    config = make_config(num_gpu_blocks=12 if preempting else 64)
    engine = Engine(config, make_requests((9, 14), (5, 20), (13, 3), (6, 1), (7, 9)),
                    fast_forward=False)
    engine.run_to_end()
    assert not preempting or any(len(r.token_stretches) > 1 for r in engine.done_requests)
    return engine.done_requests


SUMMED = ("mean_itl_ms", "std_itl_ms")


def agrees(summary: dict[str, Any], reference: dict[str, Any]) -> None:
    for key, value in reference.items():
        if key in SUMMED:
            assert summary[key] == pytest.approx(value, rel=1e-12, abs=1e-9), key
        else:
            assert summary[key] == value, key  # the same floats: the same bits


@pytest.mark.parametrize("chunk", [3, 1 << 20])
def test_summary_matches_the_per_request_metrics(chunk: int) -> None:
    """(The step times and the statistics read in chunks of 3 places too.)"""
    done = _done(preempting=True)
    with patch.object(metrics, "CHUNK", chunk):
        agrees(metrics.summarize(done, 1.0, [], {}, frontend_ms=2.5), _reference(done, 2.5))


def test_requests_of_several_engines_keep_their_own_clocks() -> None:
    done = _done(preempting=True) + _done(preempting=False)
    assert done[0].step_end_s is not done[-1].step_end_s
    agrees(metrics.summarize(done, 1.0, [], {}), _reference(done, 0.0))


def test_a_request_without_tokens_adds_no_interval() -> None:
    done = _done(preempting=False)
    never_scheduled = RequestSpec("silent", done[0].prompt_len, done[0].output_len)
    silent = FinishedRequest(Request(never_scheduled, 99, 0.0, done[0].step_end_s))
    summary = metrics.summarize([silent, *done], 1.0, [], {})
    reference = _reference(done, 0.0)
    assert summary["mean_itl_ms"] == pytest.approx(reference["mean_itl_ms"], rel=1e-12)
    assert summary["total_output_tokens"] == reference["total_output_tokens"]
    assert summary["mean_ttft_ms"] == reference["mean_ttft_ms"]


def test_a_finished_request_keeps_what_its_metrics_read() -> None:
    """The slim record a finished request leaves gives the live request's metrics exactly:
    two token stretches (a preemption's gap), the prefix hit and the queueing included."""
    ends = [0.5, 0.75, 1.0, 1.5, 2.25, 3.0]
    live = Request(RequestSpec("r", 40, 4, arrival_s=0.25), 0, 0.25, ends)
    live.first_scheduled_time, live.num_cached_tokens, live.num_preemptions = 0.5, 16, 1
    for iteration in (0, 1, 4, 5):
        live.add_token(iteration)
    live.finish_time = 3.0
    done = FinishedRequest(live)
    assert done.token_stretches == [(0, 2), (4, 2)] and done.token_times == [0.5, 0.75, 2.25, 3.0]
    assert metrics.request_metrics(done) == metrics.request_metrics(live)  # type: ignore[arg-type]
    assert metrics.request_metrics(done, 5.0)["ttft_ms"] == (0.5 - 0.25) * 1000 + 5.0
    assert not hasattr(done, "spec") and not hasattr(done, "block_hashes")


@given(st.lists(st.tuples(st.floats(0.0, 500.0) | st.sampled_from([7.0, 7.01, 7.02]),
                         st.integers(0, 40)), min_size=1, max_size=30),
       st.lists(st.integers(0, 30), max_size=3), st.sampled_from([1, 2, 7, 1 << 20]))
def test_interval_stats_are_numpys_on_every_interval(places: list[tuple[float, int]],
                                                     cuts: list[int], chunk: int) -> None:
    """Percentiles and median bit for bit as numpy's over the intervals written out (ties,
    empty places, one interval, places in one bucket or many, in parts and read in chunks of
    any size), the mean and std to the last bits."""
    values = np.array([v for v, _ in places])
    counts = np.array([c for _, c in places], np.int32)
    reference = metrics.latency_stats("itl", np.repeat(values, counts))
    bounds = [0, *sorted(cuts), len(places)]
    parts = metrics.Intervals([(values[a:b], counts[a:b]) for a, b in pairwise(bounds)], [])
    with patch.object(metrics, "CHUNK", chunk):
        agrees(metrics.interval_stats("itl", parts), reference)
