"""What a sweep's points add up to: their cost, the cost / goodput Pareto frontier, and for each
SLO a point misses the diagnosis's verdict that explains it (sweep/words.py says it in words)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

Report = Mapping[str, Any]


def cost_unit(points: Sequence[Report]) -> str:
    """"usd" ($ per million output tokens) when every point that ran has a price, else
    "gpu_hours" for all of them (a GPU without a price must not look free)."""
    ran = [p for p in points if p.get("status") == "ok"]
    priced = all(p["cost"]["usd_per_m_output_tokens"] is not None for p in ran)
    return "usd" if priced else "gpu_hours"


def cost_of(point: Report, unit: str) -> float | None:
    """The point's cost in `unit`; None: it did not run."""
    if point.get("status") != "ok":
        return None
    cost = point["cost"]
    return float(cost["usd_per_m_output_tokens" if unit == "usd" else "gpu_hours"])


def ranked(points: Sequence[Report], unit: str) -> list[Report]:
    """The points that ran, cheapest first (ties: higher goodput, then grid order)."""
    return sorted((p for p in points if p.get("status") == "ok"),
                  key=lambda p: (cost_of(p, unit), -p["request_goodput"], p["index"]))


def pareto(points: Sequence[Report]) -> list[int]:
    """Indexes of the points no other point beats on both cost (lower) and goodput (higher),
    cheapest first; of equal points the first is kept."""
    front, best = [], float("-inf")
    for p in ranked(points, cost_unit(points)):
        if p["request_goodput"] > best:
            front.append(int(p["index"]))
            best = p["request_goodput"]
    return front


def why_fails(slo_verdicts: Mapping[str, Any],
              verdicts: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """For each SLO missed: {metric, value, target, kind, title, headline}, the highest-scoring
    verdict (not minor) that explains that latency (kind None: none does)."""
    out = []
    for metric, judged in slo_verdicts.items():
        if judged["ok"]:
            continue
        latency = metric.split("_")[1]
        cause = next((v for v in verdicts if not v["minor"] and latency in v["explains"]), None)
        out.append({"metric": metric, "value": judged["value"], "target": judged["target"],
                    "kind": cause and cause["kind"], "title": cause and cause["title"],
                    "headline": cause and cause["headline"]})
    return out
