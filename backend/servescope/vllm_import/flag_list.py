"""Every flag `vllm serve` 0.33 accepts, as a committed list (data/vllm_serve_flags.json) that
`import-vllm` knows them by. The list is generated from vLLM's own argument parser:
`python -m servescope.vllm_import.flag_list` with vLLM 0.33 installed (`make vllm-flags`);
tests/vllm_import/test_vllm_flag_list.py compares it with the installed vLLM (marked `vllm`)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from functools import cache
from pathlib import Path
from typing import Any

LIST_PATH = Path(__file__).resolve().parents[1] / "data" / "vllm_serve_flags.json"


def describe(parser: argparse.ArgumentParser, version: str) -> dict[str, Any]:
    """The parser's long options by destination, sorted: what the committed list holds."""
    flags: dict[str, list[str]] = {}
    for action in parser._actions:  # argparse has no public list of its arguments
        names = [o for o in action.option_strings if o.startswith("--")]
        if names and action.dest != "help":
            flags.setdefault(action.dest, []).extend(names)
    return {"vllm_version": version,
            "flags": {dest: sorted(set(names)) for dest, names in sorted(flags.items())}}


@cache
def known_dests() -> frozenset[str]:
    """The destinations (engine-argument names) of every flag in the committed list; empty
    until the list is generated."""
    if not LIST_PATH.exists():
        return frozenset()
    return frozenset(json.loads(LIST_PATH.read_text())["flags"])


def vllm_serve_parser() -> tuple[argparse.ArgumentParser, str]:
    """vLLM's own `vllm serve` parser and version (needs vLLM installed). The parser's
    defaults infer a device; on a machine without a GPU vLLM is told it is a CPU one, which
    changes no flag (the list is the same on any platform)."""
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    import vllm
    from vllm.entrypoints.common.cli_args import make_arg_parser
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    return make_arg_parser(FlexibleArgumentParser()), vllm.__version__


def main() -> int:
    parser, version = vllm_serve_parser()
    if not version.startswith("0.33"):
        print(f"vLLM {version} is installed; the list is vLLM 0.33's", file=sys.stderr)
        return 2
    LIST_PATH.write_text(json.dumps(describe(parser, version), indent=1) + "\n")
    print(f"wrote {LIST_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
