"""P/D against colocated at the same GPU count: every P:D split of the GPUs (and each pool
config given) and the colocated fleet of as many replicas (each colocated config given), at
each load (the trace's arrival rate scaled), and the answer in words: which wins at which load,
the best P/D fleet against the best colocated one, on one latency metric."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from servescope.core.fleet import make_fleet
from servescope.core.pd_config import PD_KEYS, pd_fleet_from, pool_configs
from servescope.core.request import RequestSpec
from servescope.core.resolve import resolve_fleet


def at_load(specs: Sequence[RequestSpec], load: float) -> list[RequestSpec]:
    """The trace `load` times as fast (arrival times divided by it)."""
    return [dataclasses.replace(s, arrival_s=(s.arrival_s or 0.0) / load) for s in specs]


def splits(base: Mapping[str, Any], num_gpus: int,
           pool_grid: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each P/D config of `num_gpus` GPUs: P prefill and D decode replicas (each a TP group)
    under each entry of `pool_grid` ({"prefill": {...}, "decode": {...}} overrides)."""
    configs = []
    for pools in pool_grid:
        tp = {p: int({**base, **pools.get(p, {})}.get("tensor_parallel_size", 1))
              for p in ("prefill", "decode")}
        for num_prefill in range(1, num_gpus // tp["prefill"]):
            left = num_gpus - num_prefill * tp["prefill"]
            if left % tp["decode"] or left == 0:
                continue
            configs.append({**base, **pools,
                            "prefill": {**pools.get("prefill", {}), "replicas": num_prefill},
                            "decode": {**pools.get("decode", {}),
                                       "replicas": left // tp["decode"]}})
    return configs


def pd_label(config: Mapping[str, Any], pools_given: Mapping[str, Any] | None = None) -> str:
    """"P/D 1:3", and the pool config's own keys when a grid tries several."""
    pools = pool_configs(config)
    own = [f"{pool}.{k}={v}" for pool, keys in (pools_given or {}).items()
           for k, v in keys.items() if k != "replicas"]
    label = f"P/D {len(pools['prefill'])}:{len(pools['decode'])}"
    return f"{label} ({', '.join(own)})" if own else label


def colocated_label(replicas: int, overrides: Mapping[str, Any]) -> str:
    own = ", ".join(f"{k}={v}" for k, v in overrides.items())
    return f"colocated x{replicas}" + (f" ({own})" if own else "")


def compare(base: Mapping[str, Any], specs: Sequence[RequestSpec], num_gpus: int,
            loads: Sequence[float] = (1.0,), pool_grid: Sequence[Mapping[str, Any]] = ({},),
            metric: str = "p99_itl_ms",
            colocated_grid: Sequence[Mapping[str, Any]] = ({},)) -> dict[str, Any]:
    """Per load, every point's summary metric, the best P/D and the best colocated fleet; and
    the answer in words. A point that leaves requests unfinished never wins."""
    rows = []
    for load in loads:
        trace = at_load(specs, load)
        points = []
        for config, pools_given in splits_with(base, num_gpus, pool_grid):
            fleet = pd_fleet_from(config, trace)
            fleet.run_to_end()
            points.append({"label": pd_label(config, pools_given),
                           **score(fleet.summary(), metric, trace)})
        together = [colocated_point(base, overrides, num_gpus, trace, metric)
                    for overrides in colocated_grid]
        best = min(points, key=lambda p: p["value"]) if points else None
        rows.append({"load": load, "points": points, "best_pd": best, "colocated_points":
                     together, "colocated": min(together, key=lambda p: p["value"])})
    return {"metric": metric, "num_gpus": num_gpus, "loads": rows,
            "answer": answer(rows, metric, num_gpus)}


def splits_with(base: Mapping[str, Any], num_gpus: int,
                pool_grid: Sequence[Mapping[str, Any]],
                ) -> list[tuple[dict[str, Any], Mapping[str, Any]]]:
    """Each split's config with the pool config it came from."""
    return [(config, pools) for pools in pool_grid
            for config in splits(base, num_gpus, [pools])]


def colocated_point(base: Mapping[str, Any], overrides: Mapping[str, Any], num_gpus: int,
                    trace: Sequence[RequestSpec], metric: str) -> dict[str, Any]:
    """The colocated fleet of `num_gpus` GPUs (its replicas each a TP group), `overrides`
    over the base's engine keys (the P/D keys left out)."""
    given = {**{k: v for k, v in base.items() if k not in PD_KEYS}, **overrides}
    replicas = num_gpus // int(given.get("tensor_parallel_size", 1))
    fleet = make_fleet(resolve_fleet({**given, "replicas": replicas}), trace, records=False)
    fleet.run_to_end()
    return {"label": colocated_label(replicas, overrides),
            **score(fleet.summary(), metric, trace)}


def score(summary: Mapping[str, Any], metric: str,
          trace: Sequence[RequestSpec]) -> dict[str, Any]:
    whole = summary["completed"] == len(trace)
    return {"value": float(summary[metric]) if whole else float("inf"),
            "completed": summary["completed"]}


def answer(rows: Sequence[Mapping[str, Any]], metric: str, num_gpus: int) -> str:
    sentences = []
    for row in rows:
        best, colocated = row["best_pd"], row["colocated"]
        if best is None:
            sentences.append(f"At load x{row['load']:g} no P/D split fits {num_gpus} GPUs.")
            continue
        pd_wins = best["value"] < colocated["value"]
        winner, loser = (best, colocated) if pd_wins else (colocated, best)
        sentences.append(f"At load x{row['load']:g}, {winner['label']} wins on {metric}: "
                         f"{_ms(winner)} against {_ms(loser)} for {loser['label']}.")
    return f"On {num_gpus} GPUs: " + " ".join(sentences)


def _ms(point: Mapping[str, Any]) -> str:
    value = point["value"]
    return f"{value:.1f} ms" if value != float("inf") else "unfinished requests"
