"""P/D against colocated at the same GPU count: every P:D split of the GPUs (and each pool
config given) and the colocated fleet of as many replicas, at each load (the trace's arrival
rate scaled), and the answer in words: which wins at which load, on one latency metric."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from servescope.core.fleet import make_fleet
from servescope.core.pd_config import pd_fleet_from, pool_configs
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


def pd_label(config: Mapping[str, Any]) -> str:
    pools = pool_configs(config)
    return f"P/D {len(pools['prefill'])}:{len(pools['decode'])}"


def compare(base: Mapping[str, Any], specs: Sequence[RequestSpec], num_gpus: int,
            loads: Sequence[float] = (1.0,), pool_grid: Sequence[Mapping[str, Any]] = ({},),
            metric: str = "p99_itl_ms") -> dict[str, Any]:
    """Per load, every point's summary metric, the best P/D and the colocated fleet; and the
    answer in words. A point that leaves requests unfinished never wins."""
    tp = int(base.get("tensor_parallel_size", 1))
    colocated_given = {**base, "replicas": num_gpus // tp}
    rows = []
    for load in loads:
        trace = at_load(specs, load)
        points = []
        for config in splits(base, num_gpus, pool_grid):
            fleet = pd_fleet_from(config, trace)
            fleet.run_to_end()
            points.append({"label": pd_label(config), **score(fleet.summary(), metric, trace)})
        together = make_fleet(resolve_fleet(colocated_given), trace, records=False)
        together.run_to_end()
        colocated = {"label": f"colocated x{num_gpus // tp}",
                     **score(together.summary(), metric, trace)}
        best = min(points, key=lambda p: p["value"]) if points else None
        rows.append({"load": load, "points": points, "best_pd": best, "colocated": colocated})
    return {"metric": metric, "num_gpus": num_gpus, "loads": rows,
            "answer": answer(rows, metric, num_gpus)}


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
