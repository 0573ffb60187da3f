"""`servescope sim`: run one simulation headless and write its records and summary."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from servescope.cli import CliError
from servescope.core import cost_model
from servescope.core.config import ConfigError
from servescope.core.engine import Engine
from servescope.core.records import StepRecord
from servescope.core.replicas import Replicas
from servescope.core.request import RequestSpec
from servescope.scenarios.diagnosis_check import prepare, priced
from servescope.traces import workload_json
from servescope.traces.errors import TraceFormatError
from servescope.traces.recording import atomic_writer, header, write_recording
from servescope.traces.report import TraceReport
from servescope.vllm_import.engine_config import LoadedConfig, load_engine_config

HELP = "simulate a workload under an engine config"
DESCRIPTION = ("Simulate a workload step by step with vLLM V1 semantics (or a contrast "
               "policy) and write per-step records and a vllm-bench-style summary.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workload", required=True, type=Path,
                        help="JSON list of {id, arrival_step | arrival_s, prompt_len, output_len, "
                             "priority?, shared_prefix? | prefix?} (docs/trace-format.md)")
    parser.add_argument("--config", required=True, type=Path,
                        help="engine config JSON: model (Hugging Face id), gpu, "
                             "tensor_parallel_size, quantization and other vLLM engine-argument "
                             "names; vLLM's batch defaults fill what a priced run leaves out")
    parser.add_argument("--model-config", type=Path,
                        help="a Hugging Face config.json (read offline) for a model not in the "
                             "catalog")
    parser.add_argument("--out", type=Path, help="write step records as JSONL here")
    parser.add_argument("--summary", type=Path, help="write the run summary JSON here")


def run(args: argparse.Namespace) -> int:
    loaded = load_config(args.config, args.model_config)
    specs = load_workload(args.workload)
    try:
        config, step_time = prepare(loaded.config)  # the cost model sizes KV and prices steps
    except ConfigError as err:
        raise CliError(f"{args.config}: {err}") from err
    unmodelled = loaded.not_modelled + (cost_model.not_modelled(config)
                                        if priced(config) else [])
    for sentence in unmodelled:
        print(f"note: {sentence}", file=sys.stderr)
    engine = (Replicas(config, specs, step_time) if config.data_parallel_size > 1
              else Engine(config, specs, step_time))
    records = _progress(engine.run(), len(specs), engine)
    if args.out:
        write_recording(args.out, header(config, specs, "simulated"), records)
    else:
        for _ in records:
            pass
    summary = engine.summary()
    if unmodelled:
        summary["not_modelled"] = unmodelled
    if args.summary:
        with atomic_writer(args.summary) as out:
            json.dump(summary, out, indent=1)
    else:
        json.dump(summary, sys.stdout, indent=1)
        print()
    return 0


def load_config(path: Path, model_config: Path | None = None) -> LoadedConfig:
    data = _read_json(path)
    if not isinstance(data, dict):
        raise CliError(f"{path}: an engine config must be a JSON object")
    if model_config is not None:
        hf = _read_json(model_config)
        if not isinstance(hf, dict):
            raise CliError(f"{model_config}: a Hugging Face config.json is a JSON object")
        data = {**data, "model_config": hf}
    try:
        return load_engine_config(data)
    except ConfigError as err:
        raise CliError(f"{path}: {err}") from err


def load_workload(path: Path) -> list[RequestSpec]:
    """The workload JSON the trace adapter reads (errors name the line and field)."""
    try:
        return list(workload_json.read(path, TraceReport("workload-json", "requests")))
    except TraceFormatError as err:
        raise CliError(f"{path}: {err}") from err
    except OSError as err:
        raise CliError(f"{path}: {err.strerror}") from err


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except OSError as err:
        raise CliError(f"{path}: {err.strerror}") from err
    except json.JSONDecodeError as err:
        raise CliError(f"{path}: line {err.lineno}: {err.msg}") from err


def _progress(records: Iterator[StepRecord], total: int,
              engine: Engine | Replicas) -> Iterator[StepRecord]:
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
