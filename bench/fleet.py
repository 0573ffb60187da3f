"""Fleet speed: simulated requests per second of a fleet of 1, 4, 16 and 64 replicas (Poisson
arrivals scaled with the fleet, so every replica carries the same load) against the same
replicas run as separate engines, each given up front the requests the fleet routed to it.
Prints the ratio per router and size, measured in this run (target: the fleet within 1.3x).
Both run without records (run_to_end: fast-forward and the counting KV manager), as
`servescope sim` does for a summary. The prefix-aware routers (prefix-approx, prefix-precise,
llm-d) run on the same arrivals with prefix caching on and each prompt opening with one of 8
tenants' system prompts (workload "tenants"), so their indexes and KV events have work; the
others on prompts that share nothing ("plain"). Steps cost a plain linear function of the batch
(step_time_ms, a call a step); `--priced` prices them with the cost model instead, as
`servescope sim` does (a quiet stretch's steps in one call: the engines' own work is cheaper,
and what the fleet adds weighs more). Sized for a 2-core machine: seconds, not minutes. Times
are this process's CPU seconds (time.process_time): on a shared machine wall time counts the
other tenants' work too. Each side runs `--repeat` times (7), the two in turn and in alternating
order: the ratio is the median of the turns' ratios (each turn's two runs a few seconds apart,
so a slow spell of the machine that spans both cancels, and one that falls on a single run is
outvoted), printed with the lowest and highest turn; the requests/s are each side's fastest.

`--decompose` says where a fleet's time goes: besides the separate engines and the fleet, it times
the separate engines advanced together a scrape interval at a time with no router ("interleaved":
the cost of their work interleaved in time alone, each engine's data gone cold by its next turn),
the fleet replaying the routing it chose with a router that reads nothing (the cost of holding the
replicas in one clock and routing) and the same replay stopping and reading every replica at every
scrape (the cost of the scrapes); what is left is the router's own rule."""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time
from collections.abc import Callable, Sequence

import numpy as np

from servescope.core.config import SCRAPE_INTERVAL_MS, EngineConfig
from servescope.core.engine import Engine
from servescope.core.fleet import Fleet
from servescope.core.request import RequestSpec
from servescope.core.routers.base import Decision, ReplicaState, Router
from servescope.core.routers.make import make_router
from servescope.core.step_time import StepTimeFn
from servescope.scenarios.diagnosis_check import prepare

SIZES = (1, 4, 16, 64)
CONFIG = EngineConfig(block_size=16, num_gpu_blocks=2048, max_num_seqs=64,
                      max_num_batched_tokens=2048, enable_prefix_caching=False)
CACHING = dataclasses.replace(CONFIG, enable_prefix_caching=True)
PREFIX_ROUTERS = ("prefix-approx", "prefix-precise", "llm-d")
ROUTERS = ("round-robin", "least-kv", *PREFIX_ROUTERS)
NUM_TENANTS = 8  # system prompts of 256 tokens (16 blocks) each: a few per replica's cache
SYSTEM_PROMPT_LEN = 256
# --priced: a model and GPU the cost model prices (its catalogs), the pool kept at CONFIG's size
PRICED = {"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100", "max_model_len": 8192}


def step_time_ms(num_scheduled: np.ndarray, num_context: np.ndarray) -> float:
    """A plain linear step cost (ms): at the default 4 requests/s a replica holds about five at a
    time (a request lives ~1.2 s: ~140 output tokens at ~8.5 ms a step)."""
    return 8.0 + 0.02 * float(num_scheduled.sum())


def workload(num_replicas: int, per_replica: int, rate_per_replica: float, seed: int = 0,
             tenants: bool = False) -> list[RequestSpec]:
    """Poisson arrivals; `tenants`: each prompt opens with its tenant's system prompt."""
    rng = np.random.default_rng(seed)
    n = num_replicas * per_replica
    arrivals = np.cumsum(rng.exponential(1.0 / (rate_per_replica * num_replicas), n))
    prompts = rng.integers(64, 1024, n)
    outputs = rng.integers(32, 256, n)
    of = rng.integers(0, NUM_TENANTS, n)
    return [RequestSpec(f"r{i}", int(p) + SYSTEM_PROMPT_LEN * tenants, int(o),
                        arrival_s=float(t),
                        prefix=((f"tenant{of[i]}", SYSTEM_PROMPT_LEN),) if tenants else ())
            for i, (t, p, o) in enumerate(zip(arrivals, prompts, outputs, strict=True))]


class Replay(Router):
    """The routing a fleet chose, replayed: `reads_replicas` False, the fleet stops no replica
    at scrapes; True, it stops and reads every replica at every scrape as for a real router."""

    name = "replay"

    def __init__(self, replica_of: dict[str, int], num_replicas: int, reads: bool) -> None:
        super().__init__(num_replicas, {}, 0, CONFIG.block_size)
        self.replica_of = replica_of
        self.reads_replicas = reads

    def pick(self, request: RequestSpec, replicas: Sequence[ReplicaState],
             now_s: float) -> Decision:
        return Decision(self.replica_of[request.id], (), "replayed")


@dataclasses.dataclass(frozen=True)
class Timed:
    """What a router is timed on: the replicas' config, the workload and the steps' pricing."""

    config: EngineConfig
    specs: list[RequestSpec]
    step_time: StepTimeFn


def timed_fleet(timed: Timed, n: int, router: str | Router) -> tuple[float, Fleet]:
    start = time.process_time()
    rule = (make_router(router, n, seed=0, block_size=CONFIG.block_size)
            if isinstance(router, str) else router)
    fleet = Fleet([timed.config] * n, timed.specs, rule, [timed.step_time] * n, records=False)
    fleet.run_to_end()
    return time.process_time() - start, fleet


def shares(timed: Timed, fleet: Fleet) -> list[list[RequestSpec]]:
    """Each replica's requests, as the fleet routed them."""
    routed: list[list[RequestSpec]] = [[] for _ in fleet.engines]
    for spec in timed.specs:
        routed[fleet.replica_of[spec.id]].append(spec)
    return routed


def timed_separate(timed: Timed, fleet: Fleet) -> float:
    requests = shares(timed, fleet)
    start = time.process_time()
    for share in requests:
        Engine(timed.config, share, timed.step_time, records=False).run_to_end()
    return time.process_time() - start


def timed_interleaved(timed: Timed, fleet: Fleet) -> float:
    """The separate engines advanced together, a scrape interval at a time (each runs its
    steps, or whole quiet stretches, that start before the next multiple), as one clock would:
    no router, nothing read. What this costs over running them one after another is the cost
    of their work interleaved in time alone (each engine's data cold when its turn comes)."""
    requests = shares(timed, fleet)
    start = time.process_time()
    live = [Engine(timed.config, share, timed.step_time, records=False) for share in requests]
    interval_s, turn = SCRAPE_INTERVAL_MS / 1000.0, 1
    while live:
        live = [engine for engine in live if run_before(engine, turn * interval_s)]
        turn += 1
    return time.process_time() - start


def run_before(engine: Engine, until_s: float) -> bool:
    """Advance the engine while its clock is before `until_s`; False once it has ended."""
    while engine.clock.time_s < until_s:
        if not engine.advance_unrecorded():
            return False
    return True


def setup(router: str, n: int, args: argparse.Namespace) -> Timed:
    """The config and workload a router is timed on: the prefix-aware ones on tenants' prompts
    with prefix caching on, the others on prompts that share nothing; steps priced by the plain
    linear cost, or (`--priced`) by the cost model as `servescope sim` prices them."""
    tenants = router in PREFIX_ROUTERS
    config = CACHING if tenants else CONFIG
    step_time: StepTimeFn | None = step_time_ms
    if args.priced:
        config, step_time = prepare(dataclasses.replace(config, **PRICED))
    assert step_time is not None
    return Timed(config, workload(n, args.per_replica, args.rate, tenants=tenants), step_time)


def measure(router: str, n: int, args: argparse.Namespace) -> str:
    """One row of the table: `args.repeat` turns, each a run of either side (in alternating
    order: a shared machine's slow spells fall on both); the median turn's ratio and the
    range, each side's fastest run."""
    timed = setup(router, n, args)
    fleet = timed_fleet(timed, n, router)[1]
    assert len(fleet.done_requests) == len(timed.specs)
    fleet_runs: list[float] = []
    separate_runs: list[float] = []
    for turn in range(args.repeat):
        if turn % 2:
            separate_runs.append(timed_separate(timed, fleet))
        fleet_runs.append(timed_fleet(timed, n, router)[0])
        if not turn % 2:
            separate_runs.append(timed_separate(timed, fleet))
    ratios = sorted(f / s for f, s in zip(fleet_runs, separate_runs, strict=True))
    workload_name = 'tenants' if router in PREFIX_ROUTERS else 'plain'
    num_requests = len(timed.specs)
    return (f"{router:>14} {workload_name:>8} {n:>8} {num_requests:>8} "
            f"{num_requests / min(fleet_runs):>12.0f} "
            f"{num_requests / min(separate_runs):>15.0f} "
            f"{statistics.median(ratios):>6.2f} {ratios[0]:>5.2f}-{ratios[-1]:.2f}")


def decompose(router: str, n: int, args: argparse.Namespace) -> str:
    """One row of the decomposition: each run's fastest of `args.repeat`, over the separate
    engines' (the replays route as the fleet did)."""
    timed = setup(router, n, args)
    fleet = timed_fleet(timed, n, router)[1]
    runs: dict[str, Callable[[], float]] = {
        "separate": lambda: timed_separate(timed, fleet),
        "interleaved": lambda: timed_interleaved(timed, fleet),
        "replay": lambda: timed_fleet(timed, n, Replay(fleet.replica_of, n, False))[0],
        "scrapes": lambda: timed_fleet(timed, n, Replay(fleet.replica_of, n, True))[0],
        "router": lambda: timed_fleet(timed, n, router)[0]}
    best = {name: float("inf") for name in runs}
    for _ in range(args.repeat):
        for name, run in runs.items():
            best[name] = min(best[name], run())
    base = best["separate"]
    return (f"{router:>14} {n:>8} {base * 1000:>12.0f} " +
            " ".join(f"{best[name] / base:>11.2f}" for name in list(runs)[1:]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--per-replica", type=int, default=60, help="requests per replica")
    parser.add_argument("--rate", type=float, default=4.0, help="requests/s per replica")
    parser.add_argument("--router", action="append", choices=ROUTERS,
                        help="routers to time (default: all of " + ", ".join(ROUTERS) + ")")
    parser.add_argument("--repeat", type=int, default=7,
                        help="turns, a run of each side a turn (default 7: on a shared "
                             "machine one turn's ratio moves by +-0.1, or more)")
    parser.add_argument("--priced", action="store_true",
                        help="price steps with the cost model (Llama-3.1-8B-Instruct on an H100, "
                             "as servescope sim does) instead of the plain linear cost")
    parser.add_argument("--decompose", action="store_true",
                        help="where the fleet's time goes: each run over the separate engines'")
    args = parser.parse_args()
    if args.decompose:
        print(f"{'router':>14} {'replicas':>8} {'separate ms':>12} {'interleaved':>11} "
              f"{'replay':>11} {'scrapes':>11} {'router':>11}")
    else:
        print(f"{'router':>14} {'workload':>8} {'replicas':>8} {'requests':>8} "
              f"{'fleet req/s':>12} {'separate req/s':>15} {'ratio':>6} {'range':>9}")
    for router in args.router or ROUTERS:
        for n in SIZES:
            print((decompose if args.decompose else measure)(router, n, args), flush=True)


if __name__ == "__main__":
    main()
