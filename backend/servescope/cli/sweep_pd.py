"""`servescope sweep --pd-gpus N`: every P:D split of N GPUs (under each pool config of the
grid file) against the colocated fleet of N GPUs (each colocated config), at each load, run in
this process (sweep/pd.py, sweep/pd_grid.py); writes the comparison and prints the answer in
words: the best P/D fleet against the best colocated one, which wins at which load."""

from __future__ import annotations

import argparse
import json
from typing import Any

from servescope.cli import CliError
from servescope.cli._scenario import read_json
from servescope.cli._trace import load_trace
from servescope.core.config_error import ConfigError
from servescope.core.pd_config import PD_KEYS, POOLS
from servescope.sweep.grid import MAX_POINTS, MAX_REPLICAS, GridError
from servescope.sweep.pd import compare
from servescope.sweep.pd_grid import read_pd_grid
from servescope.traces.recording import atomic_writer
from servescope.vllm_import.engine_config import load_engine_config


def base_and_pools(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, Any]]:
    """The config file's engine keys (vLLM's names read) with its link, threshold and failure
    policy, and its own pools' overrides (less their replicas: each split sets them)."""
    data = read_json(args.config)
    if not isinstance(data, dict):
        raise CliError(f"{args.config}: an engine config must be a JSON object")
    try:
        base = load_engine_config({k: v for k, v in data.items() if k not in PD_KEYS}).given
    except ConfigError as err:
        raise CliError(f"{args.config}: {err}") from err
    base.update({k: data[k] for k in PD_KEYS if k not in POOLS and k in data})
    pools = {p: {k: v for k, v in data[p].items() if k != "replicas"}
             for p in POOLS if isinstance(data.get(p), dict)}
    return base, pools


def run_pd_sweep(args: argparse.Namespace) -> int:
    # a split has a prefill and a decode replica; the colocated fleet's replicas are bounded
    # as a grid sweep's (sweep/grid.py MAX_REPLICAS)
    if not 2 <= args.pd_gpus <= MAX_REPLICAS:
        raise CliError(f"--pd-gpus: expected 2 to {MAX_REPLICAS} GPUs, got {args.pd_gpus}")
    base, own_pools = base_and_pools(args)
    try:
        grid = read_pd_grid(args.grid, own_pools)
    except GridError as err:
        raise CliError(f"{args.grid}: {err}") from err
    # runs: each load x (at most a split per GPU x pool configs + colocated configs)
    runs = len(grid["loads"]) * (args.pd_gpus * len(grid["pools"]) + len(grid["colocated"]))
    if runs > MAX_POINTS:
        raise CliError(f"{args.grid}: up to {runs} runs; at most {MAX_POINTS}")
    specs = load_trace(args)[0]
    try:
        result = compare(base, specs, args.pd_gpus, grid["loads"], grid["pools"],
                         args.pd_metric, grid["colocated"])
    except ConfigError as err:
        raise CliError(f"{args.grid or args.config}: {err}") from err
    with atomic_writer(args.out) as out:
        json.dump(result, out, indent=1)
    print(result["answer"])
    return 0
