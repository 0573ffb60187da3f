"""The `servescope` command: one subcommand per module (`import_vllm` is `import-vllm`), each
declaring its HELP and DESCRIPTION texts (and an EPILOG if it has one), `add_arguments(parser)`
and `run(args)`; `build_parser` binds them, so a module holds no argparse plumbing."""

from __future__ import annotations

import argparse
import importlib
import sys

# Add a module here to add a command.
COMMAND_MODULES = ("sim", "diagnose", "import_vllm", "exercise", "export", "serve", "compare",
                   "traces", "sweep")


def build_parser(commands: tuple[str, ...] = COMMAND_MODULES) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="servescope",
        description="A visual explorer of LLM serving-engine internals (vLLM V1 semantics).",
    )
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in commands:
        command = importlib.import_module(f"servescope.cli.{name}")
        sub = subparsers.add_parser(name.replace("_", "-"), help=command.HELP,
                                    description=command.DESCRIPTION,
                                    epilog=getattr(command, "EPILOG", None))
        command.add_arguments(sub)
        sub.set_defaults(func=command.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    named = argv[0].replace("-", "_") if argv else ""
    # a command named first: only its module is imported (the others cost a tenth of a second)
    args = build_parser((named,) if named in COMMAND_MODULES else COMMAND_MODULES).parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except CliError as err:
        print(f"servescope: error: {err}", file=sys.stderr)
        return 2


class CliError(Exception):
    """A user error the CLI reports in one line, without a traceback."""
