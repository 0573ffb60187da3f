"""Shortest queue: the replica whose scraped vllm:num_requests_waiting is smallest.

llm-d's queue scorer (gateway-api-inference-extension, pkg/epp/scheduling/framework/plugins/
scorer/queue.go: score = (max - waiting) / (max - min) over the candidates, 1 for all when
they are equal, from vllm:num_requests_waiting) under the max-score picker, which shuffles the
candidates before taking the first best: ties are broken by the router's seeded generator.
"""

from __future__ import annotations

from collections.abc import Sequence

from servescope.core.request import RequestSpec
from servescope.core.routers.base import Decision, ReplicaState, Router, best_of


class ShortestQueueRouter(Router):
    name = "shortest-queue"

    def pick(self, request: RequestSpec, replicas: Sequence[ReplicaState],
             now_s: float) -> Decision:
        waiting = [r.num_waiting for r in replicas]
        low, high = min(waiting), max(waiting)
        scores = tuple(1.0 if high == low else (high - w) / (high - low) for w in waiting)
        chosen = best_of(scores, self.rng)
        return Decision(chosen, scores, f"shortest queue: {waiting[chosen]} waiting "
                        f"(longest {high}; scraped at {replicas[chosen].scraped_s:.3f} s)")
