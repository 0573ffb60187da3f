"""Shared CLI options: a scenario is a preset, or a workload file plus an engine config file."""

from __future__ import annotations

import argparse
from typing import Any

from servescope.cli import CliError
from servescope.core.config import ConfigError, EngineConfig
from servescope.core.request import RequestSpec
from servescope.scenarios.presets import PresetError, load_preset


def add_scenario_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("scenario (a preset, or --workload with --config)")
    group.add_argument("--preset", help="a preset name from traces/presets (e.g. kv-starvation)")
    group.add_argument("--workload", help="workload JSON (as for `servescope sim`)")
    group.add_argument("--config", help="engine config JSON (as for `servescope sim`)")
    group.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                       help="override one config field, e.g. --set max_num_seqs=64")


def load_scenario(args: argparse.Namespace) -> tuple[EngineConfig, list[RequestSpec]]:
    from servescope.cli.sim import load_config, load_workload

    if args.preset:
        try:
            config, specs, _ = load_preset(args.preset)
        except PresetError as err:
            raise CliError(str(err)) from err
    elif args.workload and args.config:
        config, specs = load_config(args.config).config, load_workload(args.workload)
    else:
        raise CliError("give --preset NAME, or --workload FILE and --config FILE")
    if args.set:
        try:
            config = config.replace(**dict(_override(item) for item in args.set))
        except (ConfigError, TypeError) as err:
            raise CliError(f"--set: {err}") from err
    return config, specs


def _override(item: str) -> tuple[str, Any]:
    import json

    name, eq, raw = item.partition("=")
    if not eq:
        raise CliError(f"--set {item!r}: expected FIELD=VALUE")
    try:
        return name, json.loads(raw)
    except json.JSONDecodeError:
        return name, raw
