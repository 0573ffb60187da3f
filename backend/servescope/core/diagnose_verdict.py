"""The shapes a diagnosis is made of: a verdict, one piece of its evidence, one recommended knob.
Plain JSON data, so the CLI, the server and the sweep read the same thing."""

from __future__ import annotations

from typing import Any

# The latencies a verdict can drive up, by the names the SLOs use (sweep/slo.py LATENCIES).
LATENCIES = ("ttft", "tpot", "itl", "e2el")


def verdict(kind: str, title: str, score: float, evidence: list[dict[str, Any]],
            recommendations: list[dict[str, Any]], measure_next: list[str], *,
            explains: tuple[str, ...], headline: str) -> dict[str, Any]:
    """`explains`: the latencies this limit drives up; `headline`: one sentence with the
    numbers, what the sweep says when an SLO on one of those latencies fails."""
    return {"kind": kind, "title": title, "score": round(min(max(score, 0.0), 1.0), 4),
            "explains": list(explains), "headline": headline, "evidence": evidence,
            "recommendations": recommendations, "measure_next": measure_next}


def ev(name: str, value: Any, text: str) -> dict[str, Any]:
    return {"name": name, "value": plain(value), "text": text}


def knob(flag: str, value: Any, change: dict[str, Any], why: str,
         targets: list[tuple[str, str]]) -> dict[str, Any]:
    """`change`: EngineConfig fields for the re-simulation ({}: not simulated); `targets`:
    [metric, "down"|"up"] it is meant to move. `expected` is filled in when it is checked."""
    return {"flag": flag, "value": value, "change": change, "why": why,
            "targets": [list(t) for t in targets], "expected": None}


def plain(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 6)
    if hasattr(value, "item"):
        return plain(value.item())
    return value


def num(value: float) -> str:
    """A figure for a sentence: 878,123 / 7.6 / 0.25."""
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.2g}" if abs(value) < 1 else f"{value:.1f}"
