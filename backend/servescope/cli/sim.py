"""`servescope sim`: run one simulation headless and write its records and summary."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from servescope.cli import CliError
from servescope.cli._scenario import (
    load_engine_args,
    load_workload,
    print_effective,
    read_json,
    write_summary,
)
from servescope.cli._trace import add_trace_options, load_trace
from servescope.cli.sim_pd import add_pd_arguments, run_pd, wants_pd
from servescope.core import cost_model
from servescope.core.config import ROUTERS, ConfigError
from servescope.core.decode_stretch import DecodeStretch
from servescope.core.engine import Engine
from servescope.core.fleet import Fleet, make_fleet
from servescope.core.records import StepRecord
from servescope.core.replicas import DataParallel
from servescope.core.resolve import resolve_fleet
from servescope.scenarios.diagnosis_check import prepare, priced
from servescope.scenarios.spec_speedup import speculation_line, speedup
from servescope.traces.epp_config import read_router_config
from servescope.traces.errors import TraceFormatError
from servescope.traces.recording import header, write_recording

if TYPE_CHECKING:
    from tqdm import tqdm

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
                        help="engine config JSON: model (Hugging Face id), gpu, "
                             "tensor_parallel_size, quantization and other vLLM engine-argument "
                             "names; what it leaves out takes vLLM 0.33's default for the GPU "
                             "and model (the effective config is printed on stderr)")
    parser.add_argument("--speculative-config", metavar="JSON",
                        help="vLLM's --speculative-config, e.g. '{\"method\": \"eagle3\", "
                             "\"num_speculative_tokens\": 3}' (over the config file's "
                             "speculative_config); the summary then carries the acceptance "
                             "and the speed-up against the same run without speculation")
    parser.add_argument("--model-config", type=Path,
                        help="a Hugging Face config.json (read offline) for a model not in the "
                             "catalog")
    parser.add_argument("--replicas", type=int, metavar="N",
                        help="N replicas of the engine behind a router (the config's "
                             "`replicas`); the summary gains `replicas` (one object each) and "
                             "`router`, and --out holds replica 0's records")
    parser.add_argument("--router", metavar="NAME",
                        help="the fleet's router (the config's `router`, default round-robin): "
                             + ", ".join(ROUTERS))
    parser.add_argument("--router-config", type=Path, metavar="FILE",
                        help="a JSON object of the router's own settings (`router_config`), "
                             "or llm-d's EndpointPickerConfig YAML (.yaml) for the llm-d routers")
    parser.add_argument("--out", type=Path, help="write step records as JSONL here")
    parser.add_argument("--summary", type=Path, help="write the run summary JSON here")
    add_pd_arguments(parser)


def run(args: argparse.Namespace) -> int:
    data = read_json(args.config)
    if wants_pd(args, data):
        if not isinstance(data, dict):
            raise CliError(f"{args.config}: an engine config must be a JSON object")
        return run_pd(args, data)
    loaded = load_engine_args(args.config, args.model_config, args.speculative_config)
    specs, report = load_trace(args) if args.trace else (load_workload(args.workload), None)
    try:
        configs = resolve_fleet({**loaded.given, **_fleet_flags(args)})
        # the cost model sizes KV and prices steps, per replica
        prepared = [prepare(c) for c in configs]
    except ConfigError as err:
        raise CliError(f"{args.config}: {err}") from err
    config, step_time = prepared[0]
    unmodelled = loaded.not_modelled + (cost_model.not_modelled(config)
                                        if priced(config) else [])
    for sentence in unmodelled:
        print(f"note: {sentence}", file=sys.stderr)
    for name, why in loaded.defaults.items():
        print(f"note: {name} = {getattr(config, name)}: {why}", file=sys.stderr)
    print_effective(config)
    records = args.out is not None
    engine: Engine | Fleet
    if config.data_parallel_size > 1:
        engine = DataParallel(config, specs, step_time, records)
    elif config.replicas > 1 or args.replicas or args.router:
        engine = make_fleet([c for c, _ in prepared], specs, [f for _, f in prepared], records)
    else:
        engine = Engine(config, specs, step_time, records=records)
    with _progress_bar(len(specs)) as bar:
        if args.out:  # decode stretches expanded into their steps' records
            write_recording(args.out, header(config, specs, "simulated"),
                            _records(_advance(engine, bar)))
        else:  # a summary needs no records: none are built
            _run_to_end(engine, bar)
    summary = engine.summary()
    if config.speculative is not None:
        summary["speedup"] = speedup(config, specs, summary)
        print(speculation_line(config, summary), file=sys.stderr)
    if unmodelled:
        summary["not_modelled"] = unmodelled
    if report is not None and report.meta.get("measured_summary"):
        summary["measured"] = report.meta["measured_summary"]  # beside, never mixed in
    write_summary(args.summary, summary)
    return 0


class _NoBar:
    """The bar's place when stderr is no terminal (importing tqdm costs ~40 ms)."""

    n = 0

    def update(self, count: int) -> None:
        self.n += count

    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def _progress_bar(total: int) -> tqdm | _NoBar:
    """Requests finished, on stderr, only when stderr is a terminal."""
    if not sys.stderr.isatty():
        return _NoBar()
    from tqdm import tqdm
    return tqdm(total=total, unit="req", desc="simulating", file=sys.stderr, mininterval=0.2)


def _fleet_flags(args: argparse.Namespace) -> dict[str, Any]:
    """--replicas, --router and --router-config as the config keys they set."""
    flags: dict[str, Any] = {}
    if args.replicas is not None:
        flags["replicas"] = args.replicas
    if args.router is not None:
        flags["router"] = args.router
    if args.router_config is not None:
        flags["router_config"] = _read_router_config(args.router_config)
    return flags


def _read_router_config(path: Path) -> Any:
    """A JSON object, or an EndpointPickerConfig YAML file (traces/epp_config.py)."""
    if path.suffix not in (".yaml", ".yml"):
        return read_json(path)
    try:
        return read_router_config(path)
    except TraceFormatError as err:
        raise CliError(f"{path}: {err}") from err
    except OSError as err:
        raise CliError(f"{path}: {err.strerror}") from err


def _advance(engine: Engine | Fleet, bar: tqdm | _NoBar) -> Iterator[StepRecord | DecodeStretch]:
    """The engine's steps and decode stretches to the end (a fleet: replica 0's records),
    moving the bar as requests finish."""
    items = (_replica_zero(engine) if isinstance(engine, Fleet)
             else iter(engine.advance, None))
    for item in items:
        done = len(engine.done_requests)
        if done > bar.n:
            bar.update(done - bar.n)
        yield item


def _replica_zero(fleet: Fleet) -> Iterator[StepRecord]:
    for item in fleet.run():
        if isinstance(item, tuple) and item[0] == 0:
            yield item[1]


def _run_to_end(engine: Engine | Fleet, bar: tqdm | _NoBar) -> None:
    """The engine (a fleet: every replica) to its end, unrecorded, moving the bar as requests
    finish."""
    if isinstance(engine, Fleet):
        for _ in engine.run():
            if len(engine.done_requests) > bar.n:
                bar.update(len(engine.done_requests) - bar.n)
        return
    while engine.advance_unrecorded():
        if len(engine.done_requests) > bar.n:
            bar.update(len(engine.done_requests) - bar.n)


def _records(items: Iterator[StepRecord | DecodeStretch]) -> Iterator[StepRecord]:
    for item in items:
        if isinstance(item, DecodeStretch):
            yield from item.records()
        else:
            yield item
