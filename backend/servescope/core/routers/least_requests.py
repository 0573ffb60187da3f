"""Least requests: the replica with the fewest requests this router sent and has not yet
seen finish (its own count, exact and never stale).

vLLM 0.33 vllm/v1/engine/core_client.py, DPLBAsyncMPClient: `engine_inflight`, "exact
per-engine count of this client's unfinished requests", raised when a request is sent and
lowered when its output finishes; ties go to the first replica from a start that rotates by
one each decision, as its `eng_start_index` does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from servescope.core.request import RequestSpec
from servescope.core.routers.base import Decision, ReplicaState, Router, decide


class LeastRequestsRouter(Router):
    name = "least-requests"

    def __init__(self, num_replicas: int, config: dict[str, Any], seed: int,
                 block_size: int) -> None:
        super().__init__(num_replicas, config, seed, block_size)
        self.in_flight = [0] * num_replicas

    def pick(self, request: RequestSpec, replicas: Sequence[ReplicaState],
             now_s: float) -> Decision:
        return decide(self.in_flight, self.decisions, "requests in flight")

    def sent(self, request: RequestSpec, replica: int, now_s: float) -> None:
        super().sent(request, replica, now_s)
        self.in_flight[replica] += 1

    def finished(self, request_id: str, replica: int, now_s: float) -> None:
        self.in_flight[replica] -= 1
