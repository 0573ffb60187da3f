"""Percentiles from DoneRequests' columns (api/reports/latency_columns.py) are the ones numpy gives
over the engine's own request metrics (core.metrics.request_metrics, listed request by request):
whole runs and windows, preempted requests whose token stretches break, single-token requests,
the front end's overhead, async scheduling, and hand-made weighted samples."""

from __future__ import annotations

import numpy as np
import pytest

from servescope.api.reports.done_requests import DoneRequests
from servescope.api.reports.latency_columns import weighted_percentiles
from servescope.api.reports.overview import LATENCIES, PERCENTILES, percentiles
from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.request import RequestSpec


def listed(metrics: list[dict], start_s: float | None, end_s: float | None) -> dict:
    """The percentiles as numpy gives them over the request-by-request metrics."""
    rows = [m for m in metrics
            if (start_s is None or m["arrival_s"] + (m["e2el_ms"] or 0.0) / 1000.0 >= start_s)
            and (end_s is None or m["arrival_s"] + (m["e2el_ms"] or 0.0) / 1000.0 <= end_s)]
    values = {"ttft_ms": [r["ttft_ms"] for r in rows if r["ttft_ms"] is not None],
              "tpot_ms": [r["tpot_ms"] for r in rows if r["tpot_ms"] is not None],
              "itl_ms": [x for r in rows for x in r["itl_ms"]],
              "e2el_ms": [r["e2el_ms"] for r in rows if r["e2el_ms"] is not None]}
    out = {"num_requests": len(rows)}
    for key in LATENCIES:
        arr = np.asarray(values[key], float)
        out[key] = {f"p{p}": float(np.percentile(arr, p)) if arr.size else None
                    for p in PERCENTILES}
    return out


@pytest.mark.parametrize("async_scheduling", [False, True])
def test_window_percentiles_are_numpys_over_the_request_metrics(async_scheduling: bool) -> None:
    # 48 blocks of 16 tokens for up to 16 requests of up to 300 tokens: preemptions
    config = EngineConfig(num_gpu_blocks=48, block_size=16, max_num_seqs=16,
                          max_num_batched_tokens=128, frontend_overhead_ms=1.5,
                          async_scheduling=async_scheduling)
    specs = [RequestSpec(id=f"r{k}", prompt_len=20 + 7 * k % 180, output_len=1 + 11 * k % 120,
                         arrival_s=k * 0.004) for k in range(120)]
    engine = Engine(config, specs)
    for _ in engine.run():
        pass
    metrics = engine.request_metrics()
    assert sum(m["num_preemptions"] for m in metrics) > 0
    assert any(m["output_len"] == 1 for m in metrics)
    done = DoneRequests.of(engine)
    end = engine.time_s
    for window in [(None, None), (None, end / 2), (end / 3, 2 * end / 3), (end * 2, None)]:
        got = percentiles(done, 0, True, *window)
        expected = listed(metrics, *window)
        assert got["num_requests"] == expected["num_requests"]
        for key in LATENCIES:
            assert got[key] == expected[key], (window, key)
    assert percentiles(done, 0, True, None, None)["upto_s"] == engine.step_end_s[-1]


def test_a_weighted_percentile_is_numpys_over_the_repeated_values() -> None:
    rng = np.random.default_rng(5)
    for _ in range(200):
        values = rng.choice([0.1, 0.7, 2.5, 3.3, 10.0, 1e-3], size=rng.integers(1, 6),
                            replace=False)
        counts = rng.integers(0, 4, size=len(values))
        counts[0] += 1
        repeated = np.repeat(values, counts)
        qs = (0, 1, 50, 90, 95, 99, 100)
        assert weighted_percentiles(values, counts, qs) == [float(np.percentile(repeated, q))
                                                            for q in qs]
    many = rng.random(5000) * 0.01  # most in a few buckets of leading bits
    counts = rng.integers(0, 5, size=len(many))
    qs = (0, 50, 90, 99, 99.9, 100)
    assert weighted_percentiles(many, counts, qs) == [
        float(np.percentile(np.repeat(many, counts), q)) for q in qs]
    assert weighted_percentiles(np.zeros(0), np.zeros(0, np.int64), (50,)) == [None]
