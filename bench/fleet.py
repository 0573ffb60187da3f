"""Fleet speed: simulated requests per second of a fleet of 1, 4, 16 and 64 replicas (Poisson
arrivals scaled with the fleet, so every replica carries the same load) against the same
replicas run as separate engines, each given up front the requests the fleet routed to it.
Prints the ratio per size, measured in this run (target: the fleet within 1.3x). Both run
without records (run_to_end: fast-forward and the counting KV manager), as `servescope sim`
does for a summary. Sized for a 2-core machine: seconds, not minutes."""

from __future__ import annotations

import argparse
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


def step_time_ms(num_scheduled: np.ndarray, num_context: np.ndarray) -> float:
    """A plain linear step cost (ms), so a replica holds a few dozen requests at this rate."""
    return 8.0 + 0.02 * float(num_scheduled.sum())


def workload(num_replicas: int, per_replica: int, rate_per_replica: float,
             seed: int = 0) -> list[RequestSpec]:
    rng = np.random.default_rng(seed)
    n = num_replicas * per_replica
    arrivals = np.cumsum(rng.exponential(1.0 / (rate_per_replica * num_replicas), n))
    prompts = rng.integers(64, 1024, n)
    outputs = rng.integers(32, 256, n)
    return [RequestSpec(f"r{i}", int(p), int(o), arrival_s=float(t))
            for i, (t, p, o) in enumerate(zip(arrivals, prompts, outputs, strict=True))]


def timed_fleet(specs: list[RequestSpec], n: int, router: str) -> tuple[float, Fleet]:
    start = time.perf_counter()
    fleet = Fleet([CONFIG] * n, specs, make_router(router, n, seed=0, block_size=16),
                  [step_time_ms] * n, records=False)
    fleet.run_to_end()
    return time.perf_counter() - start, fleet


def timed_separate(specs: list[RequestSpec], fleet: Fleet) -> float:
    shares: list[list[RequestSpec]] = [[] for _ in fleet.engines]
    for spec in specs:
        shares[fleet.replica_of[spec.id]].append(spec)
    start = time.perf_counter()
    for share in shares:
        Engine(CONFIG, share, step_time_ms, records=False).run_to_end()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--per-replica", type=int, default=60, help="requests per replica")
    parser.add_argument("--rate", type=float, default=4.0, help="requests/s per replica")
    parser.add_argument("--router", action="append",
                        help="routers to time (default: round-robin, which reads no replica "
                             "state, and least-kv, which scrapes every 50 ms)")
    args = parser.parse_args()
    print(f"{'router':>14} {'replicas':>8} {'requests':>8} {'fleet req/s':>12} "
          f"{'separate req/s':>15} {'ratio':>6}")
    for router, n in ((r, n) for r in args.router or ("round-robin", "least-kv") for n in SIZES):
        specs = workload(n, args.per_replica, args.rate)
        fleet_s, fleet = timed_fleet(specs, n, router)
        separate_s = timed_separate(specs, fleet)
        assert len(fleet.done_requests) == len(specs)
        print(f"{router:>14} {n:>8} {len(specs):>8} {len(specs) / fleet_s:>12.0f} "
              f"{len(specs) / separate_s:>15.0f} {fleet_s / separate_s:>6.2f}")


if __name__ == "__main__":
    main()
