"""Simulate one point of a sweep (a fleet: its replicas behind its router, over the trace)
and report it: the summary `servescope sim` gives for its config, its SLO verdicts and
goodput, its cost, the dominant bottleneck from the diagnosis of its worst replica, and for
each SLO missed the verdict that explains it. No Ray here: the runner calls this in a task."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from servescope.core import catalog
from servescope.core.config import ConfigError, EngineConfig
from servescope.core.fleet import Fleet, make_fleet
from servescope.core.records import StepRecord
from servescope.core.request import RequestSpec
from servescope.core.step_time import StepTimeFn
from servescope.scenarios.diagnosis_check import diagnose_records, prepare
from servescope.sweep import slo
from servescope.sweep.cost import point_cost
from servescope.sweep.grid import FLEET_GRID_KEYS, Point
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
    fleet, worst, records = run_fleet(config, step_time, specs, point.replicas, slos)
    # as `servescope sim` prints it: a fleet's summary when the grid names a fleet key or the
    # point has several replicas (sim's --replicas/--router), else the single engine's own
    as_fleet = point.replicas > 1 or any(k in point.values for k in FLEET_GRID_KEYS)
    summary = fleet.summary() if as_fleet else fleet.engines[0].summary()
    rows = [row for engine in fleet.engines for row in engine.request_metrics()]
    diagnosis = diagnose_records(config, [s for s in specs if fleet.replica_of[s.id] == worst],
                                 records, fleet.engines[worst].summary(), step_time,
                                 check=False, derived=True)
    verdicts = slo.judge(summary, slos)
    return {**out, "status": "ok", "config": config.to_dict(), "summary": summary,
            "slo": verdicts, "meets_slo": all(v["ok"] for v in verdicts.values()),
            "request_goodput": slo.request_goodput(rows, slos, summary["duration"]),
            "cost": point_cost(catalog.gpu(config.gpu or "").key,
                               config.tensor_parallel_size * point.replicas,
                               summary["duration"], summary["total_output_tokens"], prices),
            "diagnosis": {"dominant": diagnosis["dominant"], "replica": worst,
                          "title": _title(diagnosis, diagnosis["dominant"])},
            "why_fails": [{**w, "replica": worst}
                          for w in why_fails(verdicts, diagnosis["verdicts"])]}


def run_fleet(config: EngineConfig, step_time: StepTimeFn | None,
              specs: Sequence[RequestSpec], replicas: int, slos: Mapping[str, float],
              ) -> tuple[Fleet, int, list[StepRecord]]:
    """The point's fleet run to its end, the replica the diagnosis reads (the worst against
    the SLOs: slo.worst_replica) and that replica's step records. One replica is today's
    engine, recorded as it runs; a larger fleet runs unrecorded, then (being deterministic)
    once more with records, of which only the worst replica's are kept: one replica's records
    in memory, as for one engine."""
    def fleet(records: bool) -> Fleet:
        return make_fleet([config] * replicas, specs, [step_time] * replicas, records,
                          seed=ROUTER_SEED)

    if replicas == 1:
        single = fleet(True)
        return single, 0, [record for _, record in _steps(single)]
    unrecorded = fleet(False)
    unrecorded.run_to_end()
    worst = slo.worst_replica([engine.summary() for engine in unrecorded.engines], slos)
    return unrecorded, worst, [record for replica, record in _steps(fleet(True))
                               if replica == worst]


def _steps(fleet: Fleet) -> Iterator[tuple[int, StepRecord]]:
    """(replica, record) pairs of the fleet's run, its routing decisions aside."""
    for item in fleet.run():
        if isinstance(item, tuple):
            yield item


def _title(diagnosis: Mapping[str, Any], dominant: str | None) -> str | None:
    return next((v["title"] for v in diagnosis["verdicts"] if v["kind"] == dominant), None)

