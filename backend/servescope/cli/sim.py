"""`servescope sim`: run one simulation headless and write its records and summary."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path

from servescope.cli import CliError
from servescope.cli._scenario import load_config, load_workload
from servescope.core.config import ConfigError
from servescope.core.engine import Engine
from servescope.core.records import StepRecord
from servescope.core.request import RequestSpec
from servescope.scenarios.diagnosis_check import prepare
from servescope.traces.errors import TraceFormatError
from servescope.traces.load import read_requests
from servescope.traces.recording import atomic_writer, header, write_recording
from servescope.traces.upload_options import FIELDS, OptionError, UploadOptions

MAX_TRACE_REQUESTS = 100_000_000  # the bound --limit and --sample-n are checked against
HELP = "simulate a workload under an engine config"
DESCRIPTION = ("Simulate a workload step by step with vLLM V1 semantics (or a contrast "
               "policy) and write per-step records and a vllm-bench-style summary.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--workload", type=Path,
                        help="JSON list of {id, arrival_step | arrival_s, prompt_len, output_len, "
                             "priority?, shared_prefix? | prefix?} (docs/trace-format.md)")
    source.add_argument("--trace", type=Path,
                        help="a request trace in any format `servescope traces inspect` reads "
                             "(Azure, BurstGPT, Mooncake, vllm bench result, ...), shaped by "
                             "the options below as an upload is")
    add_trace_options(parser)
    parser.add_argument("--config", required=True, type=Path,
                        help="engine config JSON with vLLM engine-argument names")
    parser.add_argument("--out", type=Path, help="write step records as JSONL here")
    parser.add_argument("--summary", type=Path, help="write the run summary JSON here")


def run(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    specs = load_trace(args) if args.trace else load_workload(args.workload)
    try:
        config, step_time = prepare(config)  # the cost model sizes KV and prices steps
    except ConfigError as err:
        raise CliError(f"{args.config}: {err}") from err
    engine = Engine(config, specs, step_time)
    records = _progress(engine.run(), len(specs), engine)
    if args.out:
        write_recording(args.out, header(config, specs, "simulated"), records)
    else:
        for _ in records:
            pass
    summary = engine.summary()
    if args.summary:
        with atomic_writer(args.summary) as out:
            json.dump(summary, out, indent=1)
    else:
        json.dump(summary, sys.stdout, indent=1)
        print()
    return 0


def add_trace_options(parser: argparse.ArgumentParser) -> None:
    """--format and the upload options (docs/trace-format.md), as flags."""
    group = parser.add_argument_group("trace options (with --trace)")
    for name, (kind, text) in FIELDS.items():
        group.add_argument("--" + name.replace("_", "-"), dest=f"trace_{name}",
                           metavar=name.upper() if kind is not str else "NAME", help=text)


def load_trace(args: argparse.Namespace) -> list[RequestSpec]:
    """The trace's requests with the options given as flags (errors name the option, or the
    line and field of the file)."""
    given = {name: getattr(args, f"trace_{name}") for name in FIELDS}
    try:
        options = UploadOptions.from_fields(
            {k: str(v) for k, v in given.items() if v is not None}, MAX_TRACE_REQUESTS)
        return read_requests(args.trace, options)[1]
    except OptionError as err:
        raise CliError(f"--{err.field.replace('_', '-')}: {err}") from err
    except (TraceFormatError, ValueError) as err:
        raise CliError(f"{args.trace}: {err}") from err
    except OSError as err:
        raise CliError(f"{args.trace}: {err.strerror}") from err


def _progress(records: Iterator[StepRecord], total: int, engine: Engine) -> Iterator[StepRecord]:
    """A one-line progress bar on stderr, only when stderr is a terminal."""
    if not sys.stderr.isatty():
        yield from records
        return
    for record in records:
        if record.iter % 200 == 0:
            done = len(engine.done_requests)
            bar = "#" * (30 * done // max(total, 1))
            print(f"\r[{bar:<30}] {done}/{total} requests, step {record.step}",
                  end="", file=sys.stderr)
        yield record
    print(file=sys.stderr)
