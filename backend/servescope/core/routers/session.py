"""Session affinity: a request with a session id goes where its session's hash lands on a
consistent-hash ring of the replicas; one without goes to the replica with the lowest QPS.

vLLM production-stack, src/vllm_router/routers/routing_logic.py, SessionRouter.route_request:
`hash_ring.get_node(session_id)` on a uhashring HashRing of the endpoints, and with no session
id `_qps_routing`: the first endpoint with no requests in the window, else the lowest QPS
(requests over the last --request-stats-window seconds, 60 by default). The ring here is
ketama-style as uhashring's: each replica owns VNODES points, md5 digests of "replica-i" cut
into four 32-bit points each; a session takes the first point at or after its own digest. The
totals say how many requests had no session id (`fallbacks`).
"""

from __future__ import annotations

import bisect
import hashlib
from collections import deque
from collections.abc import Sequence
from typing import Any

from servescope.core.request import RequestSpec
from servescope.core.routers.base import Decision, ReplicaState, Router

VNODES = 40  # uhashring's default vnodes per node
QPS_WINDOW_S = 60  # production-stack's --request-stats-window default


def ring_points(num_replicas: int) -> tuple[list[int], list[int]]:
    """The ring's sorted points and, for each, the replica that owns it."""
    owned = []
    for replica in range(num_replicas):
        for vnode in range(VNODES):
            digest = hashlib.md5(f"{replica}-{vnode}".encode()).digest()
            owned += [(int.from_bytes(digest[4 * k:4 * k + 4], "little"), replica)
                      for k in range(4)]
    owned.sort()
    return [p for p, _ in owned], [r for _, r in owned]


def ring_point(key: str) -> int:
    return int.from_bytes(hashlib.md5(key.encode()).digest()[:4], "little")


class SessionRouter(Router):
    name = "session"
    settings = ("qps_window_s",)

    def __init__(self, num_replicas: int, config: dict[str, Any], seed: int,
                 block_size: int) -> None:
        super().__init__(num_replicas, config, seed, block_size)
        self.points, self.owners = ring_points(num_replicas)
        self.window_s = self.setting("qps_window_s", QPS_WINDOW_S)
        self.recent: list[deque[float]] = [deque() for _ in range(num_replicas)]

    def pick(self, request: RequestSpec, replicas: Sequence[ReplicaState],
             now_s: float) -> Decision:
        n = self.num_replicas
        if request.session_id is not None:
            at = bisect.bisect_left(self.points, ring_point(request.session_id))
            chosen = self.owners[at % len(self.points)]
            return Decision(chosen, tuple(1.0 if i == chosen else 0.0 for i in range(n)),
                            f"session {request.session_id[:40]!r} hashes to it")
        qps = [self.qps(i, now_s) for i in range(n)]
        chosen = next((i for i, q in enumerate(qps) if q == 0), qps.index(min(qps)))
        return Decision(chosen, tuple(-q for q in qps),
                        f"no session id: lowest QPS ({qps[chosen]:.2f}/s over "
                        f"{self.window_s:g} s)")

    def qps(self, replica: int, now_s: float) -> float:
        recent = self.recent[replica]
        while recent and recent[0] < now_s - self.window_s:
            recent.popleft()
        return len(recent) / self.window_s

    def sent(self, request: RequestSpec, replica: int, now_s: float) -> None:
        super().sent(request, replica, now_s)
        self.fallbacks += request.session_id is None
        self.recent[replica].append(now_s)
