"""What a sweep's points add up to: the cost / goodput Pareto frontier and the answer in
words (the cheapest config that meets the SLOs, and why the next cheaper one does not: each SLO
it misses with the diagnosis's verdict on that latency and its evidence)."""

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


def _ran(points: Sequence[Report], unit: str) -> list[Report]:
    """The points that ran, cheapest first (ties: higher goodput, then grid order)."""
    return sorted((p for p in points if p.get("status") == "ok"),
                  key=lambda p: (cost_of(p, unit), -p["request_goodput"], p["index"]))


def pareto(points: Sequence[Report]) -> list[int]:
    """Indexes of the points no other point beats on both cost (lower) and goodput (higher),
    cheapest first; of equal points the first is kept."""
    front, best = [], float("-inf")
    for p in _ran(points, cost_unit(points)):
        if p["request_goodput"] > best:
            front.append(int(p["index"]))
            best = p["request_goodput"]
    return front


def label(point: Report) -> str:
    values = ", ".join(f"{k}={v}" for k, v in point["point"].items())
    return f"point {point['index']} ({values})"


def answer(points: Sequence[Report], slos: Mapping[str, float]) -> str:
    """The cheapest config meeting the SLOs and why the next cheaper one fails."""
    unit = cost_unit(points)
    ran = _ran(points, unit)
    if not ran:
        return "No point ran: every config failed or does not fit."
    if not slos:
        return (f"No SLOs given: every config that ran meets them; the cheapest is "
                f"{label(ran[0])} at {_money(ran[0], unit)}.")
    meeting = [p for p in ran if p["meets_slo"]]
    if not meeting:
        best = max(ran, key=lambda p: p["request_goodput"])
        return (f"No config meets the SLOs. The highest goodput is {label(best)}, which "
                f"misses {_misses(best)}.")
    cheapest = meeting[0]
    text = (f"Cheapest config meeting the SLOs: {label(cheapest)} at {_money(cheapest, unit)}, "
            f"goodput {cheapest['request_goodput']:.2f} req/s.")
    cheaper = [p for p in ran if cost_of(p, unit) < cost_of(cheapest, unit)]  # type: ignore[operator]
    if not cheaper:
        return text + " It is also the cheapest config that ran."
    nxt = cheaper[-1]
    return (text + f" The next cheaper one, {label(nxt)} at {_money(nxt, unit)}, "
            f"misses {_misses(nxt)}.")


def _money(point: Report, unit: str) -> str:
    if unit == "usd":
        return f"${point['cost']['usd_per_m_output_tokens']:.3f} per million output tokens"
    return f"{point['cost']['gpu_hours']:.3f} GPU-hours (no price for its GPU)"


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


def _misses(point: Report) -> str:
    """Each SLO missed and the evidence for why: '; '-joined."""
    return "; ".join(
        f"{w['metric']} {w['value']:.1f} ms > {w['target']:.1f} ms, because of "
        f"{w['kind']} ({w['title']}): {w['headline']}" if w["kind"] else
        f"{w['metric']} {w['value']:.1f} ms > {w['target']:.1f} ms, which no verdict of the "
        "diagnosis explains" for w in point["why_fails"])
