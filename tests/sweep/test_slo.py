"""SLO parsing names the known metrics; goodput counts the requests that met every SLO."""

from __future__ import annotations

import pytest

from servescope.sweep.slo import (
    METRICS,
    SloError,
    judge,
    parse_slos,
    request_goodput,
    worst_replica,
)


def test_parse_slos() -> None:
    assert parse_slos(["p99_ttft_ms=2000", "median_itl_ms = 50"]) == \
        {"p99_ttft_ms": 2000.0, "median_itl_ms": 50.0}


@pytest.mark.parametrize(("text", "words"), [
    ("p95_ttft_ms=100", "known: mean_ttft_ms"),
    ("ttft=100", "unknown SLO metric 'ttft'"),
    ("p99_ttft_ms", "METRIC=MS"),
    ("p99_ttft_ms=fast", "not a number"),
    ("p99_ttft_ms=-3", "positive"),
])
def test_bad_slos_are_refused(text: str, words: str) -> None:
    with pytest.raises(SloError) as err:
        parse_slos([text])
    assert words in str(err.value)
    if "unknown" in words:
        assert all(m in str(err.value) for m in METRICS)


def test_judge_compares_the_summary_with_each_target() -> None:
    verdicts = judge({"p99_ttft_ms": 2500.0, "p99_itl_ms": 40.0},
                     {"p99_ttft_ms": 2000.0, "p99_itl_ms": 50.0})
    assert verdicts == {"p99_ttft_ms": {"value": 2500.0, "target": 2000.0, "ok": False},
                        "p99_itl_ms": {"value": 40.0, "target": 50.0, "ok": True}}


def _row(ttft: float, tpot: float | None, itl: list[float]) -> dict[str, object]:
    return {"ttft_ms": ttft, "tpot_ms": tpot, "e2el_ms": ttft + sum(itl), "itl_ms": itl}


def test_goodput_counts_requests_within_every_slo() -> None:
    rows = [_row(100, 20, [20, 20]),  # good
            _row(900, 20, [20, 20]),  # TTFT over
            _row(100, 30, [20, 80]),  # one gap over the ITL target
            _row(100, None, [])]      # one token: no TPOT or ITL, passes on those
    slos = {"p99_ttft_ms": 500.0, "p99_itl_ms": 50.0}
    assert request_goodput(rows, slos, duration_s=2.0) == pytest.approx(2 / 2.0)
    assert request_goodput(rows, {}, duration_s=2.0) == pytest.approx(4 / 2.0)


def test_the_worst_replica_is_the_one_furthest_over_any_slo() -> None:
    replicas = [{"p99_ttft_ms": 900.0, "p99_itl_ms": 40.0},
                {"p99_ttft_ms": 2400.0, "p99_itl_ms": 30.0},   # 1.2x the TTFT target
                {"p99_ttft_ms": 1000.0, "p99_itl_ms": 75.0}]   # 1.5x the ITL target
    assert worst_replica(replicas, {"p99_ttft_ms": 2000.0, "p99_itl_ms": 50.0}) == 2
    assert worst_replica(replicas, {"p99_ttft_ms": 2000.0}) == 1
    assert worst_replica(replicas, {}) == 1  # no SLOs: the highest p99 TTFT
    assert worst_replica([replicas[0], replicas[0]], {}) == 0  # a tie: the first
