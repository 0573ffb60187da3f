"""`servescope export`: run a scenario (a preset, or a workload or trace with a config) and write
bench JSON, per-request CSV, a Perfetto trace and/or vLLM's Prometheus metrics over the run as
OpenMetrics."""

from __future__ import annotations

import argparse
from datetime import datetime
from pathlib import Path

from servescope.api.wire.serialize import normalize, request_info
from servescope.cli import CliError
from servescope.cli._scenario import add_scenario_options, load_scenario
from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.request import RequestSpec
from servescope.exports import (
    atomic_writer,
    bench_json,
    perfetto_trace,
    requests_csv,
    write_json,
    write_text,
)
from servescope.observability.families import engine_view, max_model_len, model_name
from servescope.observability.meter import Meter
from servescope.observability.openmetrics import ExportError, default_epoch, openmetrics
from servescope.scenarios.diagnosis_check import prepare

HELP = "export a run as vllm-bench JSON, per-request CSV, a Perfetto trace or OpenMetrics"
DESCRIPTION = ("Simulate a scenario (a preset, or --workload or --trace with --config) and "
               "export it: `vllm bench serve`-compatible JSON "
               "(same keys and units), one CSV row per request, a Chrome/Perfetto "
               "trace (open it at ui.perfetto.dev or chrome://tracing), and vLLM's Prometheus "
               "metrics over the whole run, stamped with simulated time from --epoch "
               "(load it with `promtool tsdb create-blocks-from openmetrics FILE DIR`).")


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
    config, specs = load_scenario(args)
    config, step_time = prepare(config)
    wants_records = bool(args.perfetto or args.openmetrics)  # --bench and --csv need none
    engine = Engine(config, specs, step_time, records=wants_records)
    meter = Meter(request_info(specs), config.enable_prefix_caching)
    records = []
    if wants_records:
        for record in engine.run():
            if args.perfetto:
                records.append(record)
            if args.openmetrics:
                meter.observe(normalize(record.to_dict()))
    else:
        engine.run_to_end()
    requests = engine.request_metrics()
    if args.bench:
        write_json(args.bench, bench_json(engine.summary(), requests, config))
    if args.csv:
        write_text(args.csv, requests_csv(requests))
    if args.perfetto:
        write_json(args.perfetto, perfetto_trace(records, requests))
    if args.openmetrics:
        _write_openmetrics(args, engine.config, specs, meter)
    print(f"wrote {', '.join(str(p) for p in outputs if p)}")
    return 0


def _write_openmetrics(args: argparse.Namespace, config: EngineConfig,
                       specs: list[RequestSpec], meter: Meter) -> None:
    data = config.to_dict()
    view = engine_view(meter, model_name(data), 0, args.label, data,
                       max_model_len(data, request_info(specs)))
    start = args.epoch if args.epoch is not None else default_epoch([view])
    try:
        chunks = openmetrics([view], start, args.interval_s)
        with atomic_writer(Path(args.openmetrics)) as out:
            for chunk in chunks:
                out.write(chunk)
    except ExportError as err:
        raise CliError(f"--{err.field.replace('_', '-')}: {err}") from err
