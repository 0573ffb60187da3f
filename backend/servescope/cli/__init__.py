"""The `servescope` command: one subcommand per module, each exposing `register(subparsers)`."""

from __future__ import annotations

import argparse
import importlib
import sys

# Each module registers its subcommand; add a module here to add a command.
COMMAND_MODULES = ("sim", "diagnose", "import_vllm", "exercise", "export", "serve", "compare",
                   "traces")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="servescope",
        description="A visual explorer of LLM serving-engine internals (vLLM V1 semantics).",
    )
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(f"servescope.cli.{name}").register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except CliError as err:
        print(f"servescope: error: {err}", file=sys.stderr)
        return 2


class CliError(Exception):
    """A user error the CLI reports in one line, without a traceback."""
