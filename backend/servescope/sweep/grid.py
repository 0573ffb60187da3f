"""A sweep's grid: engine-config keys (a fleet's `replicas`, `router` and `router_config`
among them) mapped to the values to try, checked before anything runs (an unknown key, a value
out of range or a router setting its router does not take names the key), expanded into points
in row-major order (the last key varies fastest). Each point is the base config's settings with
its grid values over them, resolved as vLLM 0.33 resolves them (core/resolve.py): an H100
point gets the H100's defaults whatever GPU the base named."""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from servescope.core import cost_model
from servescope.core.config import ConfigError, EngineConfig
from servescope.core.resolve import resolve_config
from servescope.core.routers.make import make_router
from servescope.traces._yaml import load_mapping
from servescope.traces.errors import TraceFormatError, shown

ENGINE_KEYS = ("gpu", "tensor_parallel_size", "quantization", "max_num_seqs",
               "max_num_batched_tokens", "gpu_memory_utilization", "block_size", "policy",
               "enable_prefix_caching", "async_scheduling")
FLEET_GRID_KEYS = ("replicas", "router", "router_config")  # of config.FLEET_KEYS, the sweepable
GRID_KEYS = (*ENGINE_KEYS, *FLEET_GRID_KEYS)
MAX_REPLICAS = 1024
MAX_POINTS = 10_000
# No sweepable setting has more useful values than this (the GPU catalog, powers of two of
# max_num_seqs, gpu_memory_utilization by the hundredth); checked, with MAX_POINTS, before any
# value is validated.
MAX_VALUES_PER_KEY = 256


class GridError(ValueError):
    """A grid (or base config) that cannot be swept; `field` names the key."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


@dataclass(frozen=True)
class Point:
    """One config of the grid: `values` are the grid's own keys; `config` the engine config
    each replica runs (the base's settings with the values over them, resolved; KV blocks not
    yet derived), its `replicas` and `router` the fleet's."""

    index: int
    values: dict[str, Any]
    config: EngineConfig
    replicas: int


def read_grid(path: Path) -> dict[str, list[Any]]:
    """A grid file: a JSON or YAML mapping of key -> list of values."""
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            return load_mapping(path, "a grid maps config keys to lists of values")
        except TraceFormatError as err:
            raise GridError("grid", f"{path}: {err}") from err
        except OSError as err:
            raise GridError("grid", f"{path}: {err.strerror}") from err
    try:
        data = json.loads(path.read_text())
    except OSError as err:
        raise GridError("grid", f"{path}: {err.strerror}") from err
    except json.JSONDecodeError as err:
        raise GridError("grid", f"{path}: line {err.lineno}: {err.msg}") from err
    if not isinstance(data, dict):
        raise GridError("grid", f"{path}: a grid maps config keys to lists of values")
    return data


def expand(base: Mapping[str, Any], grid: dict[str, Any]) -> list[Point]:
    """Every point of the grid over `base`; GridError names the first bad key or value."""
    check_grid(base, grid)
    keys = list(grid)
    points = []
    for index, combo in enumerate(itertools.product(*(grid[k] for k in keys))):
        values = dict(zip(keys, combo, strict=True))
        try:
            config = resolve_config({**base, **values}).config
            cost_model.resolve(config)  # model, GPU and TP that the cost model knows
            # the router takes its router_config (each router checks its own settings)
            make_router(config.router, config.replicas, config.router_config, 0,
                        config.block_size)
        except ConfigError as err:
            raise GridError(err.field, f"point {index} {values}: {err}") from err
        points.append(Point(index, values, config, config.replicas))
    return points


def check_grid(base: Mapping[str, Any], grid: dict[str, Any]) -> None:
    """`base` the settings the base config gives (EngineConfig names)."""
    try:
        resolve_config(base)
    except ConfigError as err:
        raise GridError(err.field, f"base config: {err}") from err
    if not base.get("model"):
        raise GridError("model", "the base config must name a model: the sweep prices every "
                                 "point with the cost model")
    if not grid:
        raise GridError("grid", "the grid is empty: map at least one key to its values")
    if "replicas" in base:
        _check_value(base, "replicas", base["replicas"])
    if base.get("replica_configs") is not None:
        raise GridError("replica_configs", "a sweep's replicas are alike (each point's config); "
                                           "leave replica_configs out of the base config")
    check_size(grid)
    for key, values in grid.items():
        for value in values:
            _check_value(base, key, value)
    if not base.get("gpu") and "gpu" not in grid:
        raise GridError("gpu", "name a GPU in the base config or the grid: the sweep prices "
                               "every point with the cost model")


def check_size(grid: dict[str, Any]) -> None:
    """Keys known, each a list of at most MAX_VALUES_PER_KEY values, at most MAX_POINTS points
    in all: counted from the lists' lengths, before any value is looked at."""
    size = 1
    for key, values in grid.items():
        _check_key(key)
        if not isinstance(values, list) or not values:
            raise GridError(key, "must map to a non-empty list of values")
        if len(values) > MAX_VALUES_PER_KEY:
            raise GridError(key, f"{len(values):,} values, more than the {MAX_VALUES_PER_KEY} "
                                 "a key may take")
        size *= len(values)
    if size > MAX_POINTS:
        raise GridError("grid", f"{size:,} points, more than the {MAX_POINTS:,} a sweep runs")


def _check_key(key: str) -> None:
    if key not in GRID_KEYS:
        raise GridError(str(key)[:80], f"unknown grid key; known: {', '.join(GRID_KEYS)}")
    fields = {f.name for f in dataclasses.fields(EngineConfig)}
    if key not in fields:
        raise GridError(key, "this build's engine config has no such setting (the simulator "
                             "does not model it yet), so it cannot be swept")


def _check_value(base: Mapping[str, Any], key: str, value: Any) -> None:
    if key == "replicas":
        if not isinstance(value, int) or isinstance(value, bool) or \
                not 1 <= value <= MAX_REPLICAS:
            raise GridError(key, f"must be an integer in [1, {MAX_REPLICAS}], got {shown(value)}")
    try:
        config = resolve_config({**base, key: value}).config
        if key == "gpu":
            cost_model.resolve(config)
    except ConfigError as err:
        message = str(err).removeprefix(f"{key}: ") if err.field == key else str(err)
        raise GridError(key, message) from err
    except TypeError as err:
        raise GridError(key, f"bad value {shown(value)}: {err}") from err
