"""`servescope import-vllm`: a `vllm serve` line or engine-args JSON -> an engine config."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from servescope.cli import CliError
from servescope.core.config import ConfigError
from servescope.exports import write_json
from servescope.vllm_import.args import VllmArgsError, import_text, to_vllm_serve

HELP = "read a `vllm serve` command line or engine-args JSON"
DESCRIPTION = ("Resolve a `vllm serve` command line (or engine-args JSON) into a ServeScope "
               "engine config with vLLM 0.33's defaults for the GPU's memory class, list "
               "the flags that were not understood or do not affect scheduling, and check "
               "the features against the documented compatibility matrix.")
EPILOG = ("example: servescope import-vllm --gpu H100 -- vllm serve "
          "meta-llama/Llama-3.1-8B-Instruct --max-num-seqs 128")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--file", type=Path, help="read the command line or JSON from a file "
                        "('-' for stdin)")
    parser.add_argument("--gpu", help="the GPU it runs on (e.g. H100, A100-80GB, L4): picks the "
                        "memory-class defaults")
    parser.add_argument("--usage-context", choices=("api_server", "llm_class"),
                        help="vllm serve (api_server, default for a command line) or the LLM "
                             "class (default for JSON)")
    parser.add_argument("--version", default="0.33.0", help="vLLM version to check against")
    parser.add_argument("--config-out", type=Path,
                        help="write the engine config JSON (for `servescope sim --config`)")
    parser.add_argument("--json", type=Path, help="write the whole import report as JSON")
    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help="the command line, after `--`")


def run(args: argparse.Namespace) -> int:
    text = _input_text(args)
    try:
        result = import_text(text, args.gpu, args.usage_context, args.version)
    except (VllmArgsError, ConfigError) as err:
        raise CliError(str(err)) from err
    if args.config_out:
        write_json(args.config_out, result.config.to_dict())
    if args.json:
        write_json(args.json, result.to_dict())
    sys.stdout.write(_format(result))
    return 0


def _input_text(args: argparse.Namespace) -> str:
    command = [c for c in args.command if c != "--"]
    if args.file:
        if str(args.file) == "-":
            return sys.stdin.read()
        try:
            return args.file.read_text()
        except OSError as err:
            raise CliError(f"{args.file}: {err.strerror}") from err
    if not command:
        raise CliError("give the command line after `--`, or --file")
    if len(command) == 1:
        return command[0]  # one quoted string: a pasted line or a JSON object
    return shlex.join(command)


def _format(result: Any) -> str:
    lines = ["scheduling config:"]
    for name, item in result.resolved.items():
        lines.append(f"  {name} = {item['value']}  ({item['source']})")
    if result.ignored:
        lines.append("ignored flags:")
        lines.extend(f"  {i['flag']} ({i['reason']}): {i['note']}" for i in result.ignored)
    lines.append(f"features: {', '.join(result.features) or 'none'}")
    for issue in result.compatibility:
        sources = f" [{'; '.join(issue['sources'])}]" if issue["sources"] else ""
        lines.append(f"  {issue['status']}: {' + '.join(issue['features'])}: "
                     f"{issue['note']}{sources}")
    memory = result.memory
    if memory:
        lines.append(f"memory per GPU: budget {memory['budget_gib']:.2f} GiB = weights "
                     f"{memory['weights_gib']:.2f} + activations {memory['activation_gib']:.2f} "
                     f"+ other {memory['non_torch_gib']:.2f} + KV {memory['kv_cache_gib']:.2f} "
                     f"GiB ({memory['kv_capacity_tokens']} tokens)")
    lines.extend(f"warning: {w}" for w in result.warnings)
    lines.append(f"as vllm serve: {to_vllm_serve(result.config)}")
    return "\n".join(lines) + "\n"
