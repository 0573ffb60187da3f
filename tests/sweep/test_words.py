"""The answer in words over a grid of fleets, on hand-made point reports: the cheapest fleet
that meets the SLOs named by its replicas and router, what each other router needs, and what
the next cheaper fleet misses."""

from __future__ import annotations

from typing import Any

from servescope.sweep.words import answer, slo_words

SLOS = {"p99_ttft_ms": 2000.0}


def fleet(index: int, replicas: int, router: str, ttft: float, **others: Any) -> dict[str, Any]:
    """A point of replicas x router: $0.10 per replica per million output tokens."""
    ok = ttft <= SLOS["p99_ttft_ms"]
    why = [] if ok else [{"metric": "p99_ttft_ms", "value": ttft, "target": 2000.0,
                          "kind": "queueing", "title": "Requests queue",
                          "headline": "arrivals outpace the fleet"}]
    return {"index": index, "point": {"replicas": replicas, "router": router, **others},
            "replicas": replicas, "router": router, "status": "ok",
            "cost": {"usd_per_m_output_tokens": 0.1 * replicas, "gpu_hours": 1.0},
            "request_goodput": 10.0 if ok else 4.0, "meets_slo": ok, "why_fails": why}


def grid() -> list[dict[str, Any]]:
    """Prefix-aware routing meets the SLO from 4 replicas, round-robin from 6."""
    ttft = {("prefix-approx", 2): 9000, ("prefix-approx", 4): 1500, ("prefix-approx", 6): 900,
            ("round-robin", 2): 12000, ("round-robin", 4): 4000, ("round-robin", 6): 1900}
    return [fleet(i, n, router, ms) for i, ((router, n), ms) in enumerate(ttft.items())]


def test_it_names_the_cheapest_fleet_and_what_the_other_router_needs() -> None:
    text = answer(grid(), SLOS)
    assert text.startswith("4 replicas with prefix-approx routing meet p99 TTFT 2 s at "
                           "$0.400 per million output tokens (point 1, goodput 10.00 req/s); "
                           "round-robin needs 6.")
    # the next cheaper fleet is 2 replicas with prefix-approx routing ($0.20): its miss
    assert ("The next cheaper one, 2 replicas with prefix-approx routing at $0.200 per million "
            "output tokens, misses p99_ttft_ms 9000.0 ms > 2000.0 ms, because of queueing "
            "(Requests queue): arrivals outpace the fleet.") in text


def test_a_router_that_meets_the_slos_with_no_fleet_tried_is_said_to() -> None:
    points = [p for p in grid() if not (p["router"] == "round-robin" and p["replicas"] == 6)]
    assert "; round-robin meets them with none of the fleets tried (up to 4 replicas)." in \
        answer(points, SLOS)


def test_other_grid_values_are_named_where_the_routers_differ_in_them() -> None:
    points = [fleet(0, 2, "least-kv", 1000, max_num_seqs=64),
              fleet(1, 3, "random", 3000, max_num_seqs=64),
              fleet(2, 3, "random", 1200, max_num_seqs=256)]
    text = answer(points, SLOS)
    assert text.startswith("2 replicas with least-kv routing (max_num_seqs=64) meet")
    assert "; random needs 3 (max_num_seqs=256)." in text
    assert "It is also the cheapest config that ran." in text


def test_one_replica_is_singular_and_slos_read_in_seconds_or_ms() -> None:
    text = answer([fleet(0, 1, "round-robin", 100)], SLOS)
    assert text.startswith("1 replica with round-robin routing meets p99 TTFT 2 s")
    assert slo_words({"p99_ttft_ms": 2500.0, "median_itl_ms": 40.0}) == \
        "p99 TTFT 2.5 s and median ITL 40 ms"


def test_when_no_fleet_meets_them_the_best_goodput_is_named_by_its_fleet() -> None:
    points = [fleet(0, 2, "round-robin", 5000), fleet(1, 4, "round-robin", 3000)]
    points[1]["request_goodput"] = 6.0
    assert answer(points, SLOS).startswith(
        "No config meets the SLOs. The highest goodput is 4 replicas with round-robin routing, "
        "which misses p99_ttft_ms 3000.0 ms")


def test_a_fleets_evidence_names_the_worst_replica_it_comes_from() -> None:
    points = grid()
    for p in points:
        for why in p["why_fails"]:
            why["replica"] = 1
    text = answer(points, SLOS)
    assert ("misses p99_ttft_ms 9000.0 ms > 2000.0 ms, because of queueing (Requests queue on "
            "replica 1, the worst of 2): arrivals outpace the fleet.") in text
    lone = [fleet(5, 1, "round-robin", 3000)]  # one replica: no replica to name
    assert "on replica" not in answer(lone, SLOS)
