"""Simulate one point of a sweep (a fleet: its replicas behind its router, over the trace)
and report it: the summary `servescope sim` gives for its config, its SLO verdicts and
goodput, its cost, the dominant bottleneck from the diagnosis, and for each SLO missed the
verdict that explains it. No Ray here: the runner calls this in a task."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from servescope.core import catalog
from servescope.core.config import ConfigError, EngineConfig
from servescope.core.fleet import Fleet
from servescope.core.records import StepRecord
from servescope.core.request import RequestSpec
from servescope.core.routers.make import make_router
from servescope.core.step_time import StepTimeFn
from servescope.scenarios.diagnosis_check import diagnose_records, prepare
from servescope.sweep import slo
from servescope.sweep.cost import point_cost
from servescope.sweep.grid import Point
from servescope.sweep.results import why_fails

ROUTER_SEED = 0  # a seeded router (random) draws the same picks at every point


def run_point(point: Point, specs: Sequence[RequestSpec], slos: Mapping[str, float],
              prices: Mapping[str, float]) -> dict[str, Any]:
    """The point's report; status "does_not_fit" (not run) when the weights and one
    max_model_len request do not fit in GPU memory."""
    out: dict[str, Any] = {"index": point.index, "point": dict(point.values),
                           "replicas": point.replicas, "router": point.config.router}
    try:
        config, step_time = prepare(point.config)
    except ConfigError as err:
        return {**out, "status": "does_not_fit", "reason": str(err),
                "config": point.config.to_dict()}
    fleet, first_records = run_fleet(config, step_time, specs, point.replicas)
    summary = fleet.summary()
    rows = [row for engine in fleet.engines for row in engine.request_metrics()]
    first = {r.request_id for r in fleet.routed if r.replica == 0}
    diagnosis = diagnose_records(config, [s for s in specs if s.id in first], first_records,
                                 fleet.engines[0].summary(), step_time, check=False,
                                 derived=True)
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


def run_fleet(config: EngineConfig, step_time: StepTimeFn | None,
              specs: Sequence[RequestSpec], replicas: int) -> tuple[Fleet, list[StepRecord]]:
    """The point's fleet (one replica: exactly today's engine) run to its end, and replica
    0's step records (what the diagnosis reads)."""
    router = make_router(config.router, replicas, config.router_config, ROUTER_SEED,
                         config.block_size)
    fleet = Fleet([config] * replicas, specs, router, [step_time] * replicas,
                  scrape_interval_ms=config.scrape_interval_ms)
    first_records = [item[1] for item in fleet.run()
                     if isinstance(item, tuple) and item[0] == 0]
    return fleet, first_records


def _title(diagnosis: Mapping[str, Any], dominant: str | None) -> str | None:
    return next((v["title"] for v in diagnosis["verdicts"] if v["kind"] == dominant), None)

