"""vLLM's own data-parallel balancing: what `data_parallel_size` N does with N replicas.

vLLM 0.33 vllm/v1/engine/core_client.py, DPLBAsyncMPClient.get_core_engine_for_request: each
engine's load is max(client_count * in-flight, waiting + running), the counts from the DP
coordinator's latest stats (vllm/v1/engine/coordinator.py publishes them every
min_stats_update_interval_ms = 100 ms), plus waiting * 6 * max(0, kv_cache_usage - 0.5) when
requests wait; the least load wins, the scan starting at `eng_start_index`, which rotates by
one a request; the chosen engine's waiting count goes up by client_count until the next stats
update. One API-server client here (client_count 1).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from servescope.core.request import RequestSpec
from servescope.core.routers.base import Decision, ReplicaState, Router

STATS_INTERVAL_MS = 100.0  # coordinator.py: min_stats_update_interval_ms default
KV_PENALTY = 6.0  # get_core_engine_for_request: waiting * 6.0 * max(0, usage - 0.5)
KV_PENALTY_FROM = 0.5


class DataParallelRouter(Router):
    name = "data-parallel"

    def __init__(self, num_replicas: int, config: dict[str, Any], seed: int,
                 block_size: int) -> None:
        super().__init__(num_replicas, config, seed, block_size)
        self.in_flight = [0] * num_replicas
        self.start = 0  # eng_start_index (client_index 0 of 1)
        self.counts: list[list[float]] = [[0, 0, 0.0] for _ in range(num_replicas)]
        self.seen_s = [-1.0] * num_replicas  # the stats snapshot each count is from

    def pick(self, request: RequestSpec, replicas: Sequence[ReplicaState],
             now_s: float) -> Decision:
        for state in replicas:  # a new snapshot replaces the locally raised counts
            if state.scraped_s != self.seen_s[state.replica]:
                self.seen_s[state.replica] = state.scraped_s
                self.counts[state.replica] = [state.num_waiting, state.num_running,
                                              state.kv_usage]
        n = self.num_replicas
        loads = [0.0] * n
        best, best_load = 0, float("inf")
        for i in range(n):
            idx = (self.start + i) % n
            waiting, running, usage = self.counts[idx]
            load = float(max(self.in_flight[idx], waiting + running))
            if waiting:
                load += waiting * KV_PENALTY * max(0.0, usage - KV_PENALTY_FROM)
            loads[idx] = load
            if load < best_load:
                best, best_load = idx, load
        self.counts[best][0] += 1
        self.start = (self.start + 1) % n
        return Decision(best, tuple(-x for x in loads), f"least DP load {best_load:g} "
                        "(max of in-flight and waiting + running, KV-pressure penalty)")

    def sent(self, request: RequestSpec, replica: int, now_s: float) -> None:
        super().sent(request, replica, now_s)
        self.in_flight[replica] += 1

    def finished(self, request_id: str, replica: int, now_s: float) -> None:
        self.in_flight[replica] -= 1
