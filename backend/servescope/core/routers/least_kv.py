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
from servescope.core.routers.base import Decision, ReplicaState, Router, best_of


class LeastKVRouter(Router):
    name = "least-kv"

    def __init__(self, num_replicas: int, config: dict[str, Any], seed: int,
                 block_size: int) -> None:
        super().__init__(num_replicas, config, seed, block_size)
        # the scores of the states last picked from: a fleet passes the same states list
        # until its next scrape (core/fleet.py observe)
        self.scored: tuple[Sequence[ReplicaState] | None, tuple[float, ...]] = (None, ())

    def pick(self, request: RequestSpec, replicas: Sequence[ReplicaState],
             now_s: float) -> Decision:
        states, scores = self.scored
        if replicas is not states:
            scores = tuple([1.0 - r.kv_usage for r in replicas])
            self.scored = (replicas, scores)
        chosen = best_of(scores, self.rng)
        return Decision(chosen, scores, f"least KV in use: {replicas[chosen].kv_usage:.0%} "
                        f"(scraped at {replicas[chosen].scraped_s:.3f} s)")
