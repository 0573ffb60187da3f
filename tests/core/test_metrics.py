"""The run summary, computed on columns, agrees with the per-request metrics it summarizes."""

from __future__ import annotations

from typing import Any

from support.factories import make_config, make_requests

from servescope.core import metrics
from servescope.core.engine import Engine
from servescope.core.request import Request


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
    """A tight cache preempts (several token runs a request); a roomy one does not."""
    config = make_config(num_gpu_blocks=12 if preempting else 64)
    engine = Engine(config, make_requests((9, 14), (5, 20), (13, 3), (6, 1), (7, 9)),
                    fast_forward=False)
    engine.run_to_end()
    assert not preempting or any(len(r.token_runs) > 1 for r in engine.done_requests)
    return engine.done_requests


def test_summary_matches_the_per_request_metrics() -> None:
    done = _done(preempting=True)
    summary = metrics.summarize(done, 1.0, [], {}, frontend_ms=2.5)
    for key, value in _reference(done, 2.5).items():
        assert summary[key] == value, key  # same floats in the same order: the same bits


def test_requests_of_several_engines_keep_their_own_clocks() -> None:
    done = _done(preempting=True) + _done(preempting=False)
    assert done[0].step_end_s is not done[-1].step_end_s
    summary = metrics.summarize(done, 1.0, [], {})
    for key, value in _reference(done, 0.0).items():
        assert summary[key] == value, key


def test_a_request_without_tokens_adds_no_interval() -> None:
    done = _done(preempting=False)
    silent = Request(done[0].spec, 99, 0.0, done[0].step_end_s)  # never scheduled
    summary = metrics.summarize([silent, *done], 1.0, [], {})
    reference = _reference(done, 0.0)
    assert summary["mean_itl_ms"] == reference["mean_itl_ms"]
    assert summary["total_output_tokens"] == reference["total_output_tokens"]
    assert summary["mean_ttft_ms"] == reference["mean_ttft_ms"]
