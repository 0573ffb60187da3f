"""Round-robin: the replicas in turn, whatever they hold.

vLLM production-stack, src/vllm_router/routers/routing_logic.py, RoundRobinRouter.route_request:
`sorted(endpoints, key=url)[self.req_id % len(endpoints)]`, then `req_id += 1` (replicas are in
index order here).
"""

from __future__ import annotations

from collections.abc import Sequence

from servescope.core.request import RequestSpec
from servescope.core.routers.base import Decision, ReplicaState, Router


class RoundRobinRouter(Router):
    name = "round-robin"

    def pick(self, request: RequestSpec, replicas: Sequence[ReplicaState],
             now_s: float) -> Decision:
        n = self.num_replicas
        chosen = self.decisions % n
        scores = tuple(1.0 if i == chosen else 0.0 for i in range(n))
        return Decision(chosen, scores, f"its turn (request {self.decisions} of the rotation)")
