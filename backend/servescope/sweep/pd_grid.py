"""A P/D sweep's grid file (`servescope sweep --pd-gpus N --grid FILE`): JSON or YAML with
any of
    pools:     a list of {"prefill": {...}, "decode": {...}} engine-config overrides, each
               tried at every P:D split of the GPUs (sweep/pd.py splits)
    colocated: a list of overrides of the colocated fleet of as many GPUs (a router, say)
    loads:     a list of rate multipliers of the trace (> 0)
checked before anything runs, a bad entry a GridError naming it ("pools[1].decode")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from servescope.sweep.grid import MAX_VALUES_PER_KEY, GridError, read_grid

PD_GRID_KEYS = ("pools", "colocated", "loads")


def read_pd_grid(path: Path | None,
                 default_pools: dict[str, Any] | None = None) -> dict[str, list[Any]]:
    """The grid's lists, each defaulted: one pool config (`default_pools`, else {}), one
    colocated ({}), load 1."""
    data = read_grid(path) if path is not None else {}
    for key in data:
        if key not in PD_GRID_KEYS:
            raise GridError(str(key)[:40], f"a P/D sweep's grid keys are "
                            f"{', '.join(PD_GRID_KEYS)}")
    grid = {"pools": data.get("pools", [default_pools or {}]),
            "colocated": data.get("colocated", [{}]), "loads": data.get("loads", [1.0])}
    for key, values in grid.items():
        if not isinstance(values, list) or not values or len(values) > MAX_VALUES_PER_KEY:
            raise GridError(key, f"expected a list of 1 to {MAX_VALUES_PER_KEY} values")
    for k, pools in enumerate(grid["pools"]):
        _check_object(f"pools[{k}]", pools)
        for pool, overrides in pools.items():
            if pool not in ("prefill", "decode"):
                raise GridError(f"pools[{k}].{str(pool)[:40]}", "a pool is prefill or decode")
            _check_object(f"pools[{k}].{pool}", overrides)
    for k, overrides in enumerate(grid["colocated"]):
        _check_object(f"colocated[{k}]", overrides)
    for k, load in enumerate(grid["loads"]):
        if not isinstance(load, int | float) or isinstance(load, bool) or not load > 0:
            raise GridError(f"loads[{k}]", f"expected a number > 0, got {load!r:.40}")
    return grid


def _check_object(field: str, value: Any) -> None:
    if not isinstance(value, dict):
        raise GridError(field, f"expected an object of config keys, got {value!r:.40}")
