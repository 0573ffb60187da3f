"""`servescope export`: run a scenario (a preset, or a workload or trace with a config) and write
bench JSON, per-request CSV, a Perfetto trace and/or vLLM's Prometheus metrics over the run as
OpenMetrics. A config asking for a fleet (`replicas`, `router`) runs as one: the summary gains
the fleet's keys, each request row its `replica`, each replica its own series and trace
process."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from servescope.api.wire.serialize import normalize, request_info
from servescope.cli import CliError
from servescope.cli._openmetrics import write_openmetrics
from servescope.cli._scenario import add_scenario_options, load_fleet_scenario, read_json
from servescope.cli.export_pd import run_pd_export
from servescope.core.config import ConfigError, EngineConfig
from servescope.core.fleet import Fleet, make_fleet
from servescope.core.pd_config import is_pd
from servescope.core.records import StepRecord
from servescope.core.request import RequestSpec
from servescope.exports import (
    bench_json,
    perfetto_trace,
    requests_csv,
    write_json,
    write_text,
)
from servescope.observability.families import max_model_len, model_name
from servescope.observability.fleet import replica_meters, replica_views
from servescope.observability.meter import Meter
from servescope.scenarios.diagnosis_check import prepare

HELP = "export a run as vllm-bench JSON, per-request CSV, a Perfetto trace or OpenMetrics"
DESCRIPTION = ("Simulate a scenario (a preset, or --workload or --trace with --config) and "
               "export it: `vllm bench serve`-compatible JSON "
               "(same keys and units), one CSV row per request, a Chrome/Perfetto "
               "trace (open it at ui.perfetto.dev or chrome://tracing), and vLLM's Prometheus "
               "metrics over the whole run, stamped with simulated time from --epoch "
               "(load it with `promtool tsdb create-blocks-from openmetrics FILE DIR`). A "
               "config with `replicas` N > 1 runs a fleet behind its `router`: the JSON gains "
               "the fleet's summary keys, rows their `replica`, the metrics a `replica` label "
               "and the trace a process per replica. A P/D config (`prefill`/`decode` keys, "
               "docs/pd.md) writes --bench, --csv and --openmetrics: every engine of both "
               "pools labelled `pool` and `replica`, with vLLM's NIXL connector metrics.")


def epoch(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        pass
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither unix seconds nor an ISO 8601 time") from None
    if when.tzinfo is None:
        raise argparse.ArgumentTypeError(f"{text!r} needs a time zone, e.g. {text}Z")
    return when.timestamp()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_scenario_options(parser)
    parser.add_argument("--bench", type=Path, help="write vllm-bench-serve JSON here")
    parser.add_argument("--csv", type=Path, help="write per-request CSV here")
    parser.add_argument("--perfetto", type=Path,
                        help="write a Chrome/Perfetto trace (Trace Event Format JSON) here")
    parser.add_argument("--openmetrics", type=Path,
                        help="write vLLM's metrics over the run as OpenMetrics here")
    parser.add_argument("--epoch", type=epoch, help="the wall-clock time of simulated time "
                        "0 in --openmetrics: unix seconds or ISO 8601 with a zone (default: "
                        "the run ends now)")
    parser.add_argument("--interval-s", type=float, default=1.0,
                        help="--openmetrics: seconds of simulated time between samples "
                        "(default 1)")
    parser.add_argument("--label", default="export",
                        help="--openmetrics: the value of the `session` label (default export)")


def run(args: argparse.Namespace) -> int:
    outputs = (args.bench, args.csv, args.perfetto, args.openmetrics)
    if not any(outputs):
        raise CliError("name at least one of --bench, --csv, --perfetto, --openmetrics")
    if not args.interval_s > 0:
        raise CliError("--interval-s: interval_s must be > 0")
    data = read_json(args.config) if args.config and not args.preset else None
    if isinstance(data, dict) and is_pd(data):
        return run_pd_export(args, data)
    configs, specs = load_fleet_scenario(args)
    try:
        prepared = [prepare(c) for c in configs]  # KV blocks and step prices, per replica
    except ConfigError as err:
        raise CliError(str(err)) from err
    configs = [c for c, _ in prepared]
    fleet = make_fleet(configs, specs, [f for _, f in prepared],
                       records=bool(args.perfetto or args.openmetrics))  # --bench, --csv: none
    meters = replica_meters(request_info(specs), [c.to_dict() for c in configs])
    records: list[tuple[int, StepRecord]] = []
    for replica, record in _steps(fleet) if fleet.records else ():
        if args.perfetto:
            records.append((replica, record))
        if args.openmetrics:
            meters[replica].observe(normalize(record.to_dict()))
    if not fleet.records:
        fleet.run_to_end()
    several = len(configs) > 1
    requests = [{**row, "replica": replica} if several else row
                for replica, engine in enumerate(fleet.engines)
                for row in engine.request_metrics()]
    summary = fleet.summary() if several else fleet.engines[0].summary()
    if args.bench:
        write_json(args.bench, bench_json(summary, requests, configs[0]))
    if args.csv:
        write_text(args.csv, requests_csv(requests))
    if args.perfetto:
        write_json(args.perfetto, perfetto_trace(records if several else
                                                 [r for _, r in records], requests))
    if args.openmetrics:
        _write_openmetrics(args, configs, specs, meters)
    print(f"wrote {', '.join(str(p) for p in outputs if p)}")
    return 0


def _steps(fleet: Fleet) -> Iterator[tuple[int, StepRecord]]:
    """(replica, record) pairs of the fleet's run, its routing decisions aside."""
    for item in fleet.run():
        if isinstance(item, tuple):
            yield item


def _write_openmetrics(args: argparse.Namespace, configs: list[EngineConfig],
                       specs: list[RequestSpec], meters: list[Meter]) -> None:
    """One engine's series, or each replica's with its `replica` label."""
    data = [c.to_dict() for c in configs]
    write_openmetrics(args, replica_views(meters, model_name(data[0]), 0, args.label, data,
                                          max_model_len(data[0], request_info(specs))))
