"""The Pareto frontier and the answer in words, on hand-made point reports."""

from __future__ import annotations

from typing import Any

from servescope.sweep.results import pareto, why_fails
from servescope.sweep.words import answer

SLOS = {"p99_ttft_ms": 1000.0}


def _verdict(kind: str, score: float, explains: tuple[str, ...]) -> dict[str, Any]:
    return {"kind": kind, "title": kind.replace("_", " ").title(), "score": score,
            "minor": score < 0.25, "explains": list(explains), "headline": f"{kind} evidence"}


def _point(index: int, usd: float | None, goodput: float, ttft: float,
           dominant: str | None = "kv_starvation", gpu_hours: float = 1.0) -> dict[str, Any]:
    slo = {"p99_ttft_ms": {"value": ttft, "target": 1000.0, "ok": ttft <= 1000.0}}
    verdicts = [_verdict(dominant, 0.9, ("ttft", "e2el"))] if dominant else []
    return {"index": index, "point": {"max_num_seqs": 8 * (index + 1)}, "status": "ok",
            "cost": {"usd_per_m_output_tokens": usd, "gpu_hours": gpu_hours},
            "request_goodput": goodput, "meets_slo": ttft <= SLOS["p99_ttft_ms"], "slo": slo,
            "diagnosis": {"dominant": dominant, "title": "KV cache starvation"},
            "why_fails": why_fails(slo, verdicts)}


def test_pareto_keeps_points_no_other_beats_on_cost_and_goodput() -> None:
    points = [_point(0, 2.0, 5.0, 900),   # frontier: cheapest
              _point(1, 3.0, 4.0, 900),   # dominated by 0 (dearer, less goodput)
              _point(2, 4.0, 8.0, 500),   # frontier
              _point(3, 4.0, 7.0, 500),   # same cost as 2, less goodput
              _point(4, 9.0, 8.0, 400),   # same goodput as 2, dearer
              {"index": 5, "point": {}, "status": "does_not_fit"}]
    assert pareto(points) == [0, 2]


def test_answer_names_the_cheapest_meeting_and_why_the_next_cheaper_fails() -> None:
    points = [_point(0, 1.0, 1.0, 5000, "batch_slots"),
              _point(1, 2.0, 2.0, 3000, "kv_starvation"),
              _point(2, 3.0, 4.0, 800),
              _point(3, 5.0, 4.5, 400)]
    text = answer(points, SLOS)
    assert text.startswith("Cheapest config meeting the SLOs: point 2 (max_num_seqs=24)")
    assert "$3.000 per million output tokens" in text
    assert "next cheaper one, point 1 (max_num_seqs=16)" in text
    assert "p99_ttft_ms 3000.0 ms > 1000.0 ms" in text
    assert "because of kv_starvation (Kv Starvation): kv_starvation evidence" in text
    assert "batch_slots" not in text


def test_answer_when_nothing_meets_the_slos_or_the_cheapest_does() -> None:
    failing = [_point(0, 1.0, 1.0, 5000), _point(1, 2.0, 3.0, 3000, "token_budget")]
    assert answer(failing, SLOS).startswith("No config meets the SLOs. The highest goodput is "
                                            "point 1")
    assert "It is also the cheapest" in answer([_point(0, 1.0, 1.0, 10)], SLOS)


def test_a_gpu_without_a_price_puts_every_point_in_gpu_hours() -> None:
    points = [_point(0, None, 1.0, 10, gpu_hours=4.0), _point(1, 0.5, 1.0, 10, gpu_hours=2.0)]
    assert pareto(points) == [1]  # fewer GPU-hours, same goodput; never "free"
    assert "2.000 GPU-hours" in answer(points, SLOS)


def test_why_fails_names_the_verdict_on_the_missed_latency_not_the_top_score() -> None:
    # The ITL verdict scores highest, but the SLO missed is on TTFT: the burst explains it.
    slo = {"p99_ttft_ms": {"value": 7324.0, "target": 2000.0, "ok": False},
           "p99_itl_ms": {"value": 40.0, "target": 100.0, "ok": True}}
    verdicts = [_verdict("token_budget", 0.93, ("itl", "tpot", "e2el")),
                _verdict("arrival_burst", 0.8, ("ttft", "e2el")),
                _verdict("batch_slots", 0.1, ("ttft", "e2el"))]
    (why,) = why_fails(slo, verdicts)
    assert (why["metric"], why["kind"], why["headline"]) == (
        "p99_ttft_ms", "arrival_burst", "arrival_burst evidence")
    point = {**_point(0, 1.0, 1.0, 7324.0), "why_fails": [why]}
    text = answer([point], SLOS)
    assert "misses p99_ttft_ms 7324.0 ms > 2000.0 ms, because of arrival_burst" in text
    assert "token_budget" not in text


def test_a_missed_slo_no_verdict_explains_says_so() -> None:
    slo = {"p99_itl_ms": {"value": 300.0, "target": 100.0, "ok": False}}
    # a minor verdict on ITL does not count as the reason
    (why,) = why_fails(slo, [_verdict("decode_floor", 0.1, ("itl",))])
    assert why["kind"] is None
    point = {**_point(0, 1.0, 1.0, 5000.0), "why_fails": [why]}
    assert "which no verdict of the diagnosis explains" in answer([point], SLOS)
