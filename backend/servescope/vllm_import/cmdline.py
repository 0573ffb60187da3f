"""Reading what a user pastes: a `vllm serve` command line or engine-args JSON, as
{engine argument name: raw value} (vllm_import.args resolves and checks the values)."""

from __future__ import annotations

import json
import shlex
from typing import Any

from servescope.vllm_import.flags import ALIASES, BOOLEAN


class VllmArgsError(ValueError):
    """The input is not a command line or engine-args JSON that can be read at all."""


def parse_command_line(text: str) -> dict[str, Any]:
    """`vllm serve MODEL --flag value ...` (or `python -m vllm.entrypoints.openai.api_server`)
    -> {engine arg name: raw value}; a bare boolean flag gives True, `--no-X` gives X False."""
    try:
        tokens = shlex.split(text.replace("\\\n", " "), comments=True)
    except ValueError as err:
        raise VllmArgsError(f"cannot split the command line: {err}") from err
    tokens = _strip_launcher(tokens)
    args: dict[str, Any] = {}
    index = 0
    while index < len(tokens):
        token = tokens[index]
        index += 1
        if not token.startswith("-") or token == "-":
            if "model" in args:
                raise VllmArgsError(f"unexpected positional argument {token!r}")
            args["model"] = token
            continue
        name, eq, value = token.lstrip("-").partition("=")
        name = ALIASES.get(name, name.replace("-", "_"))
        if name.startswith("no_") and name[3:] in BOOLEAN:
            args[name[3:]] = False
            continue
        if not eq and (name in BOOLEAN or index >= len(tokens) or _is_flag(tokens[index])):
            args[name] = True
            continue
        if not eq:
            value = tokens[index]
            index += 1
        args[name] = value
    return args


def _is_flag(token: str) -> bool:
    return token.startswith("-") and not _looks_numeric(token)


def _looks_numeric(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _strip_launcher(tokens: list[str]) -> list[str]:
    """Drop env assignments and the program: everything up to `serve` or the api_server module."""
    for index, token in enumerate(tokens):
        if token == "serve" or token.endswith("api_server"):
            return tokens[index + 1:]
    while tokens and "=" in tokens[0] and not tokens[0].startswith("-"):
        tokens = tokens[1:]
    return tokens


def parse_engine_args_json(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise VllmArgsError(f"engine-args JSON: line {err.lineno}: {err.msg}") from err
    if not isinstance(data, dict):
        raise VllmArgsError("engine-args JSON must be an object of engine argument names")
    return {ALIASES.get(k, k.replace("-", "_")): v for k, v in data.items()}
