"""`servescope diagnose`: which limit dominates a run, with evidence and checked knobs."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from servescope.cli import CliError
from servescope.cli._scenario import add_scenario_options, load_scenario
from servescope.core.config import EngineConfig
from servescope.core.diagnose import diagnose
from servescope.exports import write_json
from servescope.scenarios.diagnosis_check import diagnose_run

HELP = "name the dominant bottleneck of a run and the knobs to turn"
DESCRIPTION = ("Simulate a scenario (a preset, or --workload or --trace with --config; or read "
               "a `vllm bench serve` result), say which limit dominates (an arrival burst "
               "beyond prefill capacity, KV starvation, batch slots, token budget, decode "
               "floor, memory fit), with evidence, knobs by vLLM flag name checked by "
               "re-simulation (the before and after of every p99 and the throughput: "
               "confirmed, trade-off, negligible or not confirmed), and what to measure next.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_scenario_options(parser)
    parser.add_argument("--bench", type=Path,
                        help="diagnose a `vllm bench serve --save-result` JSON (summary only)")
    parser.add_argument("--no-check", action="store_true", help="skip the re-simulations")
    parser.add_argument("--check-all", action="store_true",
                        help="re-simulate the knobs of every verdict, minor ones too")
    parser.add_argument("--json", type=Path, help="write the full diagnosis as JSON here")


def run(args: argparse.Namespace) -> int:
    if args.bench:
        result = diagnose([], _read_bench(args.bench), EngineConfig())
    else:
        config, specs = load_scenario(args)
        result = diagnose_run(config, specs, check=not args.no_check, check_all=args.check_all)
    if args.json:
        write_json(args.json, result)
    sys.stdout.write(format_diagnosis(result))
    return 0


def _read_bench(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise CliError(f"{path}: {err}") from err
    if not isinstance(data, dict):
        raise CliError(f"{path}: not a vllm bench serve result object")
    return data


def format_diagnosis(result: dict[str, Any]) -> str:
    lines = [f"dominant: {result['dominant'] or 'none (no limit stands out)'}"]
    for verdict in result["verdicts"]:
        if verdict["minor"] and verdict["kind"] != result["dominant"]:
            continue
        lines.append(f"\n{verdict['title']}  (score {verdict['score']:.2f})")
        lines.append(f"  {verdict['headline']}")
        for ev in verdict["evidence"]:
            if ev["value"] is not None:
                lines.append(f"  {ev['name']} = {_num(ev['value'])}: {ev['text']}")
        for index, rec in enumerate(verdict["recommendations"], 1):
            lines.append(f"  {index}. {rec['flag']} {rec['value']}: {rec['why']}")
            lines.extend(f"       {t}" for t in _expected(rec.get("expected")))
        lines.append("  measure next: " + "; ".join(verdict["measure_next"]))
    minor = [v["kind"] for v in result["verdicts"] if v["minor"]]
    if minor:
        lines.append(f"\nminor: {', '.join(minor)}")
    for item in result["missing"]:
        lines.append(f"missing {item['metric']} (for {item['needed_for']}); "
                     f"still concluded: {item['still_concluded']}")
    return "\n".join(lines) + "\n"


def _expected(expected: dict[str, Any] | None) -> list[str]:
    if not expected:
        return []
    if not expected["checked"]:
        return [f"not checked: {expected['reason']}"]
    parts = [f"{m} {_num(v['before'])} -> {_num(v['after'])}"
             for m, v in expected["metrics"].items() if v["before"] is not None]
    return [f"re-simulated, {expected['text']}", f"  ({', '.join(parts)})"]


def _num(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)
