"""`servescope exercise NAME`: the lesson's exercises on the simulator, printed as tables."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from servescope.exports import write_json
from servescope.scenarios import exercises

NAMES = ("static-vs-continuous", "budget-sweep", "fragmentation")
DEFAULT_MODEL, DEFAULT_GPU = "meta-llama/Llama-3.1-8B-Instruct", "H100"


HELP = "run one of the lesson's exercises"
DESCRIPTION = ("static-vs-continuous: naive, static, continuous and continuous+chunked "
               "batching priced by one step-time function. budget-sweep: the "
               "--max-num-batched-tokens trade-off between TTFT and ITL, and where "
               "throughput saturates. fragmentation: 1000 requests with outputs of mean "
               "1500 and sd 600, contiguous 8192-token reservations against 16-token "
               "paged blocks, as the allocators account for them, under the placeholder "
               "step time (--rate, --model, --gpu and --placeholder do not apply to it).")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", choices=NAMES)
    parser.add_argument("--num-requests", type=int, help="workload size (default: the lesson's)")
    parser.add_argument("--rate", type=float, help="arrival rate, requests per second")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", default=DEFAULT_MODEL,
                        help=f"price steps with the cost model for this model ({DEFAULT_MODEL})")
    parser.add_argument("--gpu", default=DEFAULT_GPU, help=f"... on this GPU ({DEFAULT_GPU})")
    parser.add_argument("--placeholder", action="store_true",
                        help="price steps with the placeholder step time instead")
    parser.add_argument("--budgets", help="budget-sweep: comma-separated budgets")
    parser.add_argument("--json", type=Path, help="write the result as JSON here")


def run(args: argparse.Namespace) -> int:
    result = _run(args)
    if args.json:
        write_json(args.json, result)
    sys.stdout.write(format_result(result))
    return 0


def _run(args: argparse.Namespace) -> dict[str, Any]:
    if args.name == "fragmentation":
        specs = exercises.fragmentation_workload(num_requests=args.num_requests or 1000,
                                                 seed=args.seed)
        return exercises.fragmentation(specs)
    base = (exercises.lesson_config() if args.placeholder
            else exercises.lesson_config(args.model, args.gpu))
    if args.name == "static-vs-continuous":
        specs = exercises.lesson_workload(args.num_requests or 60, args.rate or 40.0, args.seed)
        return exercises.static_vs_continuous(specs, base)
    specs = exercises.lesson_workload(args.num_requests or 120, args.rate or 60.0, args.seed)
    budgets = tuple(int(b) for b in args.budgets.split(",")) if args.budgets else (
        256, 512, 1024, 2048, 4096, 8192, 16384)
    return exercises.budget_sweep(budgets, specs, base)


COLUMNS = {
    "static-vs-continuous": ("mode", "output_throughput", "mean_ttft_ms", "p99_itl_ms",
                             "max_itl_ms", "max_running"),
    "budget-sweep": ("max_num_batched_tokens", "output_throughput", "median_ttft_ms",
                     "p99_ttft_ms", "median_itl_ms", "p99_itl_ms"),
    "fragmentation": ("label", "kv_token_states_share", "kv_reserved_share",
                      "kv_internal_fragmentation_share", "kv_external_fragmentation_share",
                      "max_running", "output_throughput"),
}


def format_result(result: dict[str, Any]) -> str:
    columns = COLUMNS[result["exercise"]]
    table = [list(columns)] + [[_cell(row.get(c)) for c in columns] for row in result["rows"]]
    widths = [max(len(r[i]) for r in table) for i in range(len(columns))]
    lines = [f"{result['exercise']} ({result['num_requests']} requests)"]
    if "pricing" in result:
        lines.append(f"priced by {result['pricing']}")
    lines.extend("  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in table)
    if "saturation_budget" in result:
        lines.append(f"throughput saturates at max_num_batched_tokens = "
                     f"{result['saturation_budget']} (>= {result['saturation_fraction']:.0%} "
                     "of the best)")
    if "highest_throughput" in result:
        lines.append(f"highest throughput: {result['highest_throughput']}")
    return "\n".join(lines) + "\n"


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 10 else f"{value:.0f}"
    return "-" if value is None else str(value)
