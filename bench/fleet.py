"""Fleet speed: simulated requests per second of a fleet of 1, 4, 16 and 64 replicas (Poisson
arrivals scaled with the fleet, so every replica carries the same load) against the same
replicas run as separate engines, each given up front the requests the fleet routed to it.
Prints the ratio per router and size, measured in this run (target: the fleet within 1.3x).
Both run without records (run_to_end: fast-forward and the counting KV manager), as
`servescope sim` does for a summary. The prefix-aware routers (prefix-approx, prefix-precise,
llm-d) run on the same arrivals with prefix caching on and each prompt opening with one of 8
tenants' system prompts (workload "tenants"), so their indexes and KV events have work; the
others on prompts that share nothing ("plain"). Sized for a 2-core machine: seconds, not
minutes. Times are this process's CPU seconds (time.process_time): on a shared machine wall
time counts the other tenants' work too; `--repeat` keeps each side's fastest of several runs."""

from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np

from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.fleet import Fleet
from servescope.core.request import RequestSpec
from servescope.core.routers.make import make_router

SIZES = (1, 4, 16, 64)
CONFIG = EngineConfig(block_size=16, num_gpu_blocks=2048, max_num_seqs=64,
                      max_num_batched_tokens=2048, enable_prefix_caching=False)
CACHING = dataclasses.replace(CONFIG, enable_prefix_caching=True)
PREFIX_ROUTERS = ("prefix-approx", "prefix-precise", "llm-d")
ROUTERS = ("round-robin", "least-kv", *PREFIX_ROUTERS)
NUM_TENANTS = 8  # system prompts of 256 tokens (16 blocks) each: a few per replica's cache
SYSTEM_PROMPT_LEN = 256


def step_time_ms(num_scheduled: np.ndarray, num_context: np.ndarray) -> float:
    """A plain linear step cost (ms), so a replica holds a few dozen requests at this rate."""
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


def timed_fleet(specs: list[RequestSpec], n: int, router: str,
                config: EngineConfig) -> tuple[float, Fleet]:
    start = time.process_time()
    fleet = Fleet([config] * n, specs, make_router(router, n, seed=0, block_size=16),
                  [step_time_ms] * n, records=False)
    fleet.run_to_end()
    return time.process_time() - start, fleet


def timed_separate(specs: list[RequestSpec], fleet: Fleet, config: EngineConfig) -> float:
    shares: list[list[RequestSpec]] = [[] for _ in fleet.engines]
    for spec in specs:
        shares[fleet.replica_of[spec.id]].append(spec)
    start = time.process_time()
    for share in shares:
        Engine(config, share, step_time_ms, records=False).run_to_end()
    return time.process_time() - start


def measure(router: str, n: int, args: argparse.Namespace) -> str:
    """One row of the table: the fastest of `args.repeat` runs on each side."""
    tenants = router in PREFIX_ROUTERS
    config = CACHING if tenants else CONFIG
    specs = workload(n, args.per_replica, args.rate, tenants=tenants)
    fleet_s = separate_s = float("inf")
    for _ in range(args.repeat):
        seconds, fleet = timed_fleet(specs, n, router, config)
        assert len(fleet.done_requests) == len(specs)
        fleet_s = min(fleet_s, seconds)
        separate_s = min(separate_s, timed_separate(specs, fleet, config))
    return (f"{router:>14} {'tenants' if tenants else 'plain':>8} {n:>8} {len(specs):>8} "
            f"{len(specs) / fleet_s:>12.0f} {len(specs) / separate_s:>15.0f} "
            f"{fleet_s / separate_s:>6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--per-replica", type=int, default=60, help="requests per replica")
    parser.add_argument("--rate", type=float, default=4.0, help="requests/s per replica")
    parser.add_argument("--router", action="append", choices=ROUTERS,
                        help="routers to time (default: all of " + ", ".join(ROUTERS) + ")")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs of each side, the fastest kept (a busy machine is noisy)")
    args = parser.parse_args()
    print(f"{'router':>14} {'workload':>8} {'replicas':>8} {'requests':>8} "
          f"{'fleet req/s':>12} {'separate req/s':>15} {'ratio':>6}")
    for router in args.router or ROUTERS:
        for n in SIZES:
            print(measure(router, n, args), flush=True)


if __name__ == "__main__":
    main()
