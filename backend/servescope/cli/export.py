"""`servescope export`: run a scenario and write bench JSON, per-request CSV and/or a trace."""

from __future__ import annotations

import argparse
from pathlib import Path

from servescope.cli import CliError
from servescope.cli._scenario import add_scenario_options, load_scenario
from servescope.core.engine import Engine
from servescope.exports import bench_json, perfetto_trace, requests_csv, write_json, write_text
from servescope.scenarios.diagnosis_check import prepare

HELP = "export a run as vllm-bench JSON, per-request CSV or a Perfetto trace"
DESCRIPTION = ("Simulate a scenario and export it: `vllm bench serve`-compatible JSON "
               "(same keys and units), one CSV row per request, and a Chrome/Perfetto "
               "trace (open it at ui.perfetto.dev or chrome://tracing).")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_scenario_options(parser)
    parser.add_argument("--bench", type=Path, help="write vllm-bench-serve JSON here")
    parser.add_argument("--csv", type=Path, help="write per-request CSV here")
    parser.add_argument("--trace", type=Path, help="write Trace Event Format JSON here")


def run(args: argparse.Namespace) -> int:
    if not (args.bench or args.csv or args.trace):
        raise CliError("name at least one of --bench, --csv, --trace")
    config, specs = load_scenario(args)
    config, step_time = prepare(config)
    engine = Engine(config, specs, step_time)
    records = list(engine.run()) if args.trace else None
    if records is None:
        for _ in engine.run():
            pass
    requests = engine.request_metrics()
    if args.bench:
        write_json(args.bench, bench_json(engine.summary(), requests, config))
    if args.csv:
        write_text(args.csv, requests_csv(requests))
    if args.trace and records is not None:
        write_json(args.trace, perfetto_trace(records, requests))
    written = [str(p) for p in (args.bench, args.csv, args.trace) if p]
    print(f"wrote {', '.join(written)}")
    return 0
