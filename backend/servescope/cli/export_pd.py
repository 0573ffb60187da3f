"""`servescope export` for a P/D config (core/pd_config.py, a config with `prefill` or
`decode`): the vllm-bench JSON and per-request CSV over the clients' requests (each row with
its decode replica), and OpenMetrics of every engine of both pools, each series labelled with
its `pool` and `replica`, the KV connector's metrics among them (observability/pd.py)."""

from __future__ import annotations

import argparse
from typing import Any

from servescope.api.records.pd_meters import fold, pd_meters
from servescope.api.wire.serialize import request_info
from servescope.cli import CliError
from servescope.cli._openmetrics import write_openmetrics
from servescope.cli._scenario import load_workload
from servescope.cli._trace import load_trace
from servescope.core.config_error import ConfigError
from servescope.core.pd_config import PD_KEYS, pd_fleet_from, pool_configs
from servescope.exports import bench_json, requests_csv, write_json, write_text
from servescope.observability.families import max_model_len, model_name
from servescope.observability.pd import pd_views
from servescope.vllm_import.engine_config import load_engine_config


def run_pd_export(args: argparse.Namespace, data: dict[str, Any]) -> int:
    if args.perfetto:
        raise CliError("--perfetto: a P/D config's trace is not written yet (--bench, --csv "
                       "and --openmetrics are)")
    if args.set:
        raise CliError("--set: a P/D config's keys are set in its file")
    if not (args.workload or args.trace):
        raise CliError("a P/D config runs over --workload FILE or --trace FILE")
    specs = load_trace(args)[0] if args.trace else load_workload(args.workload)
    top = {k: v for k, v in data.items() if k not in PD_KEYS}
    try:
        given = {**load_engine_config(top).given, **{k: data[k] for k in PD_KEYS if k in data}}
        fleet = pd_fleet_from(given, specs, records=bool(args.openmetrics))
        meters = pd_meters(fleet, request_info(specs))
    except ConfigError as err:
        raise CliError(f"{args.config}: {err}") from err
    fold(meters, fleet.run())
    summary = fleet.summary()
    requests = [{**row, "replica": k} for k, engine in enumerate(fleet.decode.engines)
                for row in engine.request_metrics()]
    if args.bench:
        result = bench_json(summary, requests, pool_configs(given)["decode"][0])
        result["kv_transfer"] = summary["kv_transfer"]  # (bench_json keeps no kv_* key)
        write_json(args.bench, result)
    if args.csv:
        write_text(args.csv, requests_csv(requests))
    if args.openmetrics:
        first = meters.configs["decode"][0]
        write_openmetrics(args, pd_views(meters, model_name(first), 0, args.label,
                                         max_model_len(first, request_info(specs))))
    print(f"wrote {', '.join(str(p) for p in (args.bench, args.csv, args.openmetrics) if p)}")
    return 0
