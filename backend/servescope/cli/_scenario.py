"""Shared CLI inputs: a scenario is a preset, or a workload file or request trace plus an engine
config file, each read here for every subcommand (errors name the file, line and field)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from servescope.cli import CliError
from servescope.cli._trace import add_trace_options, load_trace
from servescope.core.config import ConfigError, EngineConfig
from servescope.core.request import RequestSpec
from servescope.core.resolve import resolve_fleet
from servescope.scenarios.presets import PresetError, load_preset
from servescope.traces import workload_json
from servescope.traces.errors import TraceFormatError
from servescope.traces.recording import atomic_writer
from servescope.traces.report import TraceReport
from servescope.vllm_import.engine_config import LoadedConfig, load_engine_config


def add_scenario_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("scenario (a preset, or --workload or --trace with "
                                      "--config)")
    group.add_argument("--preset", help="a preset name from traces/presets (e.g. kv-starvation)")
    group.add_argument("--workload", type=Path, help="workload JSON (as for `servescope sim`)")
    group.add_argument("--trace", type=Path,
                       help="a request trace in any format `servescope traces inspect` reads, "
                            "shaped by the trace options below (as for `servescope sim`)")
    group.add_argument("--config", type=Path, help="engine config JSON (as for `servescope sim`)")
    group.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                       help="override one config field, e.g. --set max_num_seqs=64")
    add_trace_options(parser)


def load_scenario(args: argparse.Namespace) -> tuple[EngineConfig, list[RequestSpec]]:
    """The scenario's settings (a preset's file, or --config) with --set over them, resolved
    as vLLM 0.33 resolves what they leave out (core/resolve.py)."""
    configs, specs = load_fleet_scenario(args)
    return configs[0], specs


def load_fleet_scenario(args: argparse.Namespace) -> tuple[list[EngineConfig], list[RequestSpec]]:
    """As load_scenario, one resolved config per replica (core/resolve.py's resolve_fleet: a
    config without `replicas` is one)."""
    if args.preset:
        try:
            _, specs, data = load_preset(args.preset)
        except PresetError as err:
            raise CliError(str(err)) from err
        given = dict(data["config"])
    elif args.workload and args.trace:
        raise CliError("give --workload FILE or --trace FILE, not both")
    elif (args.workload or args.trace) and args.config:
        given = load_engine_args(args.config).given
        specs = load_workload(args.workload) if args.workload else load_trace(args)[0]
    else:
        raise CliError("give --preset NAME, or --workload FILE (or --trace FILE) and "
                       "--config FILE")
    given.update(_override(item) for item in args.set)
    try:
        configs = resolve_fleet(given)
    except (ConfigError, TypeError) as err:
        raise CliError(f"--set: {err}" if args.set else str(err)) from err
    print_effective(configs[0])
    return configs, specs


def print_effective(config: EngineConfig, label: str = "") -> None:
    """The config a run ran, on stderr (stdout keeps the answer a script reads)."""
    shown = {k: v for k, v in config.to_dict().items() if v is not None and k != "model_config"}
    print(f"effective config{label}: {json.dumps(shown)}", file=sys.stderr)


def load_engine_args(path: Path, model_config: Path | None = None,
                     speculative_config: str | None = None) -> LoadedConfig:
    """An engine config file: EngineConfig fields and vLLM engine-argument names (what is not
    modelled is listed), with a Hugging Face config.json for a model outside the catalog and
    a --speculative-config JSON (as vLLM spells it) over the file's own."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise CliError(f"{path}: an engine config must be a JSON object")
    if speculative_config is not None:
        try:
            data = {**data, "speculative_config": json.loads(speculative_config)}
        except json.JSONDecodeError as err:
            raise CliError(f"--speculative-config: not JSON ({err.msg})") from err
    if model_config is not None:
        hf = read_json(model_config)
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


def write_summary(path: Path | None, summary: dict[str, Any]) -> None:
    """A run's summary as JSON: to `path` whole or not at all, else to stdout."""
    if path:
        with atomic_writer(path) as out:
            json.dump(summary, out, indent=1)
    else:
        json.dump(summary, sys.stdout, indent=1)
        print()


def read_json(path: Path) -> Any:
    """A JSON file for the CLI: a CliError names the file (and the line) when it is bad."""
    try:
        return json.loads(path.read_text())
    except OSError as err:
        raise CliError(f"{path}: {err.strerror}") from err
    except json.JSONDecodeError as err:
        raise CliError(f"{path}: line {err.lineno}: {err.msg}") from err


def _override(item: str) -> tuple[str, Any]:
    name, eq, raw = item.partition("=")
    if not eq:
        raise CliError(f"--set {item!r}: expected FIELD=VALUE")
    try:
        return name, json.loads(raw)
    except json.JSONDecodeError:
        return name, raw
