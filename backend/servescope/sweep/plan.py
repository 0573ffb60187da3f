"""One sweep from start to end, shared by `servescope sweep` and the server's sweep jobs:
check everything first, read the trace once, run the points on Ray, add up the results."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from servescope.core.request import RequestSpec
from servescope.sweep import cost, ray_runner, results, words
from servescope.sweep.grid import Point, expand


@dataclass(frozen=True)
class Plan:
    """A checked sweep: its points over the base config's settings (EngineConfig names, what
    each point resolves with its grid values), SLOs and GPU prices."""

    base: dict[str, Any]
    grid: dict[str, list[Any]]
    points: list[Point]
    slos: dict[str, float] = field(default_factory=dict)
    prices: dict[str, float] = field(default_factory=dict)


def make_plan(base: Mapping[str, Any], grid: dict[str, Any], slos: Mapping[str, float],
              price_overrides: Sequence[str] = ()) -> Plan:
    """GridError or PriceError (each naming its key) before anything runs."""
    return Plan(dict(base), dict(grid), expand(base, grid), dict(slos),
                cost.prices(price_overrides))


def execute(plan: Plan, specs: Sequence[RequestSpec], ray_address: str | None = None,
            max_parallel: int | None = None,
            on_report: Callable[[dict[str, Any]], None] | None = None,
            cancel: threading.Event | None = None, num_cpus: int | None = None,
            on_start: Callable[[list[dict[str, Any]]], None] | None = None) -> dict[str, Any]:
    """Run every point on Ray (started here unless it is already up) and add them up;
    `on_start(nodes)` once Ray is up."""
    started = ray_runner.connect(ray_address, num_cpus)
    try:
        cluster = ray_runner.nodes()
        if on_start is not None:
            on_start(cluster)
        reports = ray_runner.run(plan.points, specs, plan.slos, plan.prices, max_parallel,
                                 on_report, cancel)
    finally:
        if started:
            import ray

            ray.shutdown()
    return summarize(plan, reports, {"address": ray_address or "in-process", "nodes": cluster},
                     len(specs))


def summarize(plan: Plan, reports: list[dict[str, Any]], ray_info: dict[str, Any],
              num_requests: int) -> dict[str, Any]:
    table = cost.price_table()
    sources = {k: v["source"] for k, v in table["prices"].items()}
    for gpu, usd in plan.prices.items():
        if gpu not in table["prices"] or table["prices"][gpu]["usd_per_hour"] != usd:
            sources[gpu] = "--gpu-price"
    return {
        "base_config": dict(plan.base), "grid": plan.grid, "slos": plan.slos,
        "num_requests": num_requests,
        "gpu_prices": {"usd_per_gpu_hour": plan.prices, "date": table["date"],
                       "sources": sources},
        "cost_unit": results.cost_unit(reports),
        "points": reports, "pareto": results.pareto(reports),
        "answer": words.answer(reports, plan.slos), "ray": ray_info,
    }
