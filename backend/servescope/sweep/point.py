"""Simulate one point of a sweep (its replicas over the trace) and report it: the summary
`servescope sim` gives for its config, its SLO verdicts and goodput, its cost, the
dominant bottleneck from the diagnosis, and for each SLO missed the verdict that explains it.
No Ray here: the runner calls this in a task."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from servescope.core import catalog, metrics
from servescope.core.config import ConfigError
from servescope.core.engine import Engine
from servescope.core.request import RequestSpec
from servescope.scenarios.diagnosis_check import diagnose_records, prepare
from servescope.sweep import slo
from servescope.sweep.cost import point_cost
from servescope.sweep.grid import Point
from servescope.sweep.results import why_fails


def split_round_robin(specs: Sequence[RequestSpec], replicas: int) -> list[list[RequestSpec]]:
    """Arrivals dealt to the replicas in turn, in arrival order (a round-robin load
    balancer: it sees neither request lengths nor the replicas' load)."""
    ordered = sorted(specs, key=lambda s: (s.arrival_s or 0.0, s.arrival_step or 0))
    return [ordered[i::replicas] for i in range(replicas)]


def run_point(point: Point, specs: Sequence[RequestSpec], slos: Mapping[str, float],
              prices: Mapping[str, float]) -> dict[str, Any]:
    """The point's report; status "does_not_fit" (not run) when the weights and one
    max_model_len request do not fit in GPU memory."""
    out: dict[str, Any] = {"index": point.index, "point": dict(point.values),
                           "replicas": point.replicas}
    try:
        config, step_time = prepare(point.config)
    except ConfigError as err:
        return {**out, "status": "does_not_fit", "reason": str(err),
                "config": point.config.to_dict()}
    shares = split_round_robin(specs, point.replicas)
    engines = [Engine(config, share, step_time, records=rank == 0)
               for rank, share in enumerate(shares)]
    first_records = list(engines[0].run())  # replica 0's steps: what the diagnosis reads
    for engine in engines[1:]:
        engine.run_to_end()
    summary = _summary(engines)
    rows = [row for engine in engines for row in engine.request_metrics()]
    diagnosis = diagnose_records(config, shares[0], first_records, engines[0].summary(),
                                 step_time, check=False, derived=True)
    verdicts = slo.judge(summary, slos)
    return {**out, "status": "ok", "config": config.to_dict(), "summary": summary,
            "slo": verdicts, "meets_slo": all(v["ok"] for v in verdicts.values()),
            "request_goodput": slo.request_goodput(rows, slos, summary["duration"]),
            "cost": point_cost(catalog.gpu(config.gpu or "").key,
                               config.tensor_parallel_size * point.replicas,
                               summary["duration"], summary["total_output_tokens"], prices),
            "diagnosis": {"dominant": diagnosis["dominant"],
                          "title": _title(diagnosis, diagnosis["dominant"])},
            "why_fails": why_fails(verdicts, diagnosis["verdicts"])}


def _summary(engines: list[Engine]) -> dict[str, Any]:
    """One engine: exactly its own summary (what `servescope sim` prints). Replicas: the same
    keys over all their requests, the run lasting as long as the slowest replica."""
    if len(engines) == 1:
        return engines[0].summary()
    waste: dict[str, int] = {}
    for engine in engines:
        for key, value in engine.waste_totals.items():
            waste[key] = waste.get(key, 0) + value
    return metrics.summarize([r for e in engines for r in e.done_requests],
                             max(e.time_s for e in engines),
                             [r for e in engines for r in e.rejected], waste)


def _title(diagnosis: Mapping[str, Any], dominant: str | None) -> str | None:
    return next((v["title"] for v in diagnosis["verdicts"] if v["kind"] == dominant), None)

