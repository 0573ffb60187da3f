"""Least KV: the replica whose scraped KV cache usage is lowest.

llm-d's kv-cache-utilization scorer (gateway-api-inference-extension, pkg/epp/scheduling/
framework/plugins/scorer/kvcache_utilization.go: score = 1 - KVCacheUsagePercent, from
vllm:kv_cache_usage_perc) under the max-score picker, which shuffles the candidates before
taking the first best: ties are broken by the router's seeded generator.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat
from operator import attrgetter, sub
from typing import Any

from servescope.core.request import RequestSpec
from servescope.core.routers.base import Decision, ReplicaState, Router, draw, tied_best


class LeastKVRouter(Router):
    name = "least-kv"

    def __init__(self, num_replicas: int, config: dict[str, Any], seed: int,
                 block_size: int) -> None:
        super().__init__(num_replicas, config, seed, block_size)
        # the states last picked from (a fleet passes the same list until its next scrape:
        # core/fleet.py observe), their scores, and the best: the decision when one replica
        # scores best (every pick until the next scrape makes it), else the tied replicas
        # (a tie draws each time)
        self.scored: tuple[Sequence[ReplicaState] | None, tuple[float, ...],
                           Decision | list[int]] = (None, (), [])

    def pick(self, request: RequestSpec, replicas: Sequence[ReplicaState],
             now_s: float) -> Decision:
        states, scores, best = self.scored
        if replicas is not states:
            scores = tuple(map(sub, repeat(1.0), map(attrgetter("kv_usage"), replicas)))
            best = tied_best(scores)
            if len(best) == 1:
                best = self.decision(best[0], scores, replicas)
            self.scored = (replicas, scores, best)
        if isinstance(best, Decision):
            return best
        return self.decision(draw(best, self.rng), scores, replicas)

    @staticmethod
    def decision(chosen: int, scores: tuple[float, ...],
                 replicas: Sequence[ReplicaState]) -> Decision:
        return Decision(chosen, scores, f"least KV in use: {replicas[chosen].kv_usage:.0%} "
                        f"(scraped at {replicas[chosen].scraped_s:.3f} s)")
