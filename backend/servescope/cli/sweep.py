"""`servescope sweep`: simulate a grid of engine configs over one trace on Ray and name the
cheapest config that meets the SLOs."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from servescope.cli import CliError
from servescope.cli._scenario import load_engine_args
from servescope.cli._trace import add_trace_options, load_trace
from servescope.cli.sweep_pd import run_pd_sweep
from servescope.sweep import plan as sweep_plan
from servescope.sweep.cost import PriceError
from servescope.sweep.grid import GRID_KEYS, GridError, read_grid
from servescope.sweep.ray_runner import Cancelled, SweepError
from servescope.sweep.slo import METRICS, SloError, parse_slos
from servescope.traces.recording import atomic_writer

HELP = "sweep a config grid over a trace on Ray (capacity planning)"
DESCRIPTION = ("Simulate every config of a grid over one trace, as Ray tasks (Ray in this "
               "process unless --ray-address names a cluster), and report each point's "
               "vllm-bench summary, SLO verdicts, goodput, cost and dominant bottleneck, the "
               "cost/goodput Pareto set, and the cheapest config that meets the SLOs. Each "
               "point is a fleet: its replicas behind its router (one replica: the single "
               "engine), costing replicas x tensor_parallel_size GPUs.")
EPILOG = (f"Grid keys: {', '.join(GRID_KEYS)} (router: a name `servescope sim --router` "
          "takes; router_config: objects of that router's settings). SLO metrics: "
          f"{', '.join(METRICS)}. A fleet point's bottleneck and why-it-fails come from its "
          "worst replica. With --pd-gpus N the sweep compares P/D fleets of N GPUs with the "
          "colocated fleet of N GPUs instead (grid keys pools, colocated, loads). "
          "docs/sweep.md has the details.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--trace", required=True, type=Path,
                        help="a request trace in any format `servescope sim --trace` reads, "
                             "shaped by the trace options below; read once, shared by all points")
    add_trace_options(parser)
    parser.add_argument("--config", required=True, type=Path,
                        help="the base engine config JSON (it must name a model)")
    parser.add_argument("--grid", type=Path,
                        help="JSON or YAML mapping grid keys to lists of values (required "
                             "but with --pd-gpus, whose grid keys are pools, colocated, loads)")
    parser.add_argument("--slo", action="append", default=[], metavar="METRIC=MS",
                        help="a latency objective, e.g. p99_ttft_ms=2000 (repeatable)")
    parser.add_argument("--gpu-price", action="append", default=[], metavar="GPU=USD",
                        help="$ per GPU-hour, overriding the price table (repeatable)")
    parser.add_argument("--ray-address", help="an existing Ray cluster (HOST:PORT); default: "
                                              "start Ray in this process")
    parser.add_argument("--max-parallel", type=int, help="points running at once (default: "
                                                         "the cluster's CPUs)")
    parser.add_argument("--out", required=True, type=Path, help="write the results JSON here")
    pd = parser.add_argument_group("P/D against colocated (docs/pd.md, docs/sweep.md)")
    pd.add_argument("--pd-gpus", type=int, metavar="N",
                    help="compare every P:D split of N GPUs with the colocated fleet of N GPUs "
                         "at each load, in this process; the answer says which wins where")
    pd.add_argument("--pd-metric", default="p99_itl_ms", choices=METRICS, metavar="METRIC",
                    help="--pd-gpus: the latency compared (default p99_itl_ms)")


def run(args: argparse.Namespace) -> int:
    if args.pd_gpus is not None:
        return run_pd_sweep(args)
    if args.grid is None:
        raise CliError("--grid: required (but with --pd-gpus)")
    plan, specs = _prepare(args)
    bar = _progress_bar(len(plan.points))
    cancel = threading.Event()

    def started(nodes: list[dict[str, Any]]) -> None:
        # Ray is up (ray.init may set its own SIGINT handler): from here Ctrl-C asks the
        # point loop to stop, which it checks between points' results
        signal.signal(signal.SIGINT, lambda *_: cancel.set())
        _started(plan, nodes, args)

    try:
        result = sweep_plan.execute(plan, specs, args.ray_address, args.max_parallel,
                                    on_report=bar.report if bar else None, cancel=cancel,
                                    on_start=started)
    except (KeyboardInterrupt, Cancelled):
        print("\nservescope: sweep cancelled; nothing written", file=sys.stderr)
        return 130
    except SweepError as err:
        raise CliError(str(err)) from err
    finally:
        if bar:
            bar.close()
    with atomic_writer(args.out) as out:
        json.dump(result, out, indent=1)
    _print_result(result, args.out)
    return 0


def _prepare(args: argparse.Namespace) -> tuple[sweep_plan.Plan, list[Any]]:
    """Everything checked before Ray starts: options, SLOs, prices, config, grid, trace."""
    if args.max_parallel is not None and args.max_parallel < 1:
        raise CliError("--max-parallel: must be at least 1")
    try:
        slos = parse_slos(args.slo)
        plan = sweep_plan.make_plan(load_engine_args(args.config).given, read_grid(args.grid), slos,
                                    args.gpu_price)
    except (SloError, PriceError, GridError) as err:
        raise CliError(str(err)) from err
    return plan, load_trace(args)[0]


class _Bar:
    def __init__(self, total: int) -> None:
        from tqdm import tqdm

        self.tqdm = tqdm(total=total, unit="point", file=sys.stderr)
        self.failed = 0

    def report(self, report: dict[str, Any]) -> None:
        self.failed += report["status"] == "failed"
        self.tqdm.set_postfix(failed=self.failed)
        self.tqdm.update(1)

    def close(self) -> None:
        self.tqdm.close()


def _progress_bar(total: int) -> _Bar | None:
    return _Bar(total) if sys.stderr.isatty() else None


def _started(plan: sweep_plan.Plan, nodes: list[dict[str, Any]],
             args: argparse.Namespace) -> None:
    where = args.ray_address or "Ray in this process"
    cpus = sum(n["cpus"] for n in nodes)
    print(f"servescope: {len(plan.points)} points on {where} ({len(nodes)} node(s), {cpus:g} "
          "CPUs); Ctrl-C cancels", file=sys.stderr, flush=True)


def _print_result(result: dict[str, Any], out: Path) -> None:
    points = result["points"]
    counts = {s: sum(p["status"] == s for p in points) for s in ("ok", "does_not_fit", "failed")}
    print(f"{len(points)} points: {counts['ok']} ran, {counts['does_not_fit']} do not fit, "
          f"{counts['failed']} failed; Pareto set: points {result['pareto']}; wrote {out}")
    for p in points:
        if p["status"] == "failed":
            print(f"point {p['index']} failed after {p['attempts']} attempts: {p['reason']}")
    print(result["answer"])
