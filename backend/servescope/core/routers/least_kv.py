"""Least KV: the replica whose scraped KV cache usage is lowest.

llm-d's kv-cache-utilization scorer (gateway-api-inference-extension, pkg/epp/scheduling/
framework/plugins/scorer/kvcache_utilization.go: score = 1 - KVCacheUsagePercent, from
vllm:kv_cache_usage_perc) under the max-score picker, which shuffles the candidates before
taking the first best: ties are broken by the router's seeded generator.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from servescope.core.request import RequestSpec
from servescope.core.routers.base import Decision, ReplicaState, Router, best_of, sole_best


class LeastKVRouter(Router):
    name = "least-kv"

    def __init__(self, num_replicas: int, config: dict[str, Any], seed: int,
                 block_size: int) -> None:
        super().__init__(num_replicas, config, seed, block_size)
        # the states last picked from (a fleet passes the same list until its next scrape:
        # core/fleet.py observe), their scores, and the decision when one replica scores best
        # (every pick until the next scrape makes it; a tie draws each time)
        self.scored: tuple[Sequence[ReplicaState] | None, tuple[float, ...],
                           Decision | None] = (None, (), None)

    def pick(self, request: RequestSpec, replicas: Sequence[ReplicaState],
             now_s: float) -> Decision:
        states, scores, sole = self.scored
        if replicas is not states:
            scores = tuple([1.0 - r.kv_usage for r in replicas])
            best = sole_best(scores)
            sole = None if best is None else self.decision(best, scores, replicas)
            self.scored = (replicas, scores, sole)
        if sole is not None:
            return sole
        return self.decision(best_of(scores, self.rng), scores, replicas)

    @staticmethod
    def decision(chosen: int, scores: tuple[float, ...],
                 replicas: Sequence[ReplicaState]) -> Decision:
        return Decision(chosen, scores, f"least KV in use: {replicas[chosen].kv_usage:.0%} "
                        f"(scraped at {replicas[chosen].scraped_s:.3f} s)")
