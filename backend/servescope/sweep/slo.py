"""Service-level objectives on a run's summary metrics (`p99_ttft_ms=2000`), whether a run
meets them, and its goodput: the requests per second that met every objective themselves."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

LATENCIES = ("ttft", "tpot", "itl", "e2el")
STATS = ("mean", "median", "p99")
METRICS = tuple(f"{stat}_{lat}_ms" for lat in LATENCIES for stat in STATS)
_METRIC = re.compile(r"(mean|median|p99)_(ttft|tpot|itl|e2el)_ms")


class SloError(ValueError):
    """A bad --slo; `field` is the metric (or "slo" when none could be read)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def parse_slos(items: Iterable[str]) -> dict[str, float]:
    """`metric=ms` strings -> {metric: ms}; SloError names the known metrics on a bad one."""
    slos: dict[str, float] = {}
    for item in items:
        name, sep, raw = item.partition("=")
        name = name.strip()
        if not sep:
            raise SloError("slo", f"{item!r}: write an SLO as METRIC=MS, e.g. p99_ttft_ms=2000")
        check_metric(name)
        try:
            value = float(raw)
        except ValueError:
            raise SloError(name, f"{name}: {raw!r} is not a number of milliseconds") from None
        if not value > 0 or value == float("inf"):
            raise SloError(name, f"{name}: must be a positive number of ms, got {raw!r}")
        slos[name] = value
    return slos


def check_metric(name: str) -> None:
    if not _METRIC.fullmatch(name):
        raise SloError(name, f"unknown SLO metric {name!r}; known: {', '.join(METRICS)}")


def judge(summary: Mapping[str, Any], slos: Mapping[str, float]) -> dict[str, dict[str, Any]]:
    """{metric: {value, target, ok}} for each SLO against the run's summary."""
    out = {}
    for metric, target in slos.items():
        value = float(summary[metric])
        out[metric] = {"value": value, "target": target, "ok": value <= target}
    return out


def good_request(row: Mapping[str, Any], slos: Mapping[str, float]) -> bool:
    """One request meets the SLOs when its own TTFT, TPOT, E2EL and largest inter-token gap are
    within the target set on that latency (whatever the statistic): vllm bench's goodput,
    with ITL added. A request with no value for a latency (one output token: no TPOT) passes
    on that latency."""
    for metric, target in slos.items():
        latency = metric.split("_")[1]
        value = max(row["itl_ms"], default=None) if latency == "itl" else row[f"{latency}_ms"]
        if value is not None and value > target:
            return False
    return True


def request_goodput(rows: Iterable[Mapping[str, Any]], slos: Mapping[str, float],
                    duration_s: float) -> float:
    """Requests per second that finished within every SLO."""
    good = sum(1 for row in rows if good_request(row, slos))
    return good / max(duration_s, 1e-12)


def worst_replica(summaries: Sequence[Mapping[str, Any]], slos: Mapping[str, float]) -> int:
    """Of a fleet's replicas (each one's own summary), the one furthest over the SLOs: the
    highest value / target on any SLO; with none, the highest p99 TTFT. Ties: the first."""
    def badness(summary: Mapping[str, Any]) -> float:
        if not slos:
            return float(summary["p99_ttft_ms"])
        return max(float(summary[metric]) / target for metric, target in slos.items())

    return max(range(len(summaries)), key=lambda i: (badness(summaries[i]), -i))
