"""A fleet's per-replica story, folded from every replica's step records as the fleet runs
(on the track's thread) and read as a compact frame at any simulated time (on the loop): each
replica's running and waiting counts, KV usage, a thumbnail of its pool, its prefix-cache hit
rate and its p99 TTFT so far, and the routed arrivals (what the explorer's fleet view draws);
with meters, each replica's vLLM metrics too (GET /metrics: api/reports/metrics.py)."""

from __future__ import annotations

import threading
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from servescope.api.wire.fleet import MAX_VIEW_REPLICAS
from servescope.api.wire.serialize import normalize
from servescope.core.metrics import since_arrival_ms
from servescope.core.records import StepRecord
from servescope.core.request import RequestSpec
from servescope.observability.families import EngineView
from servescope.observability.fleet import replica_views
from servescope.observability.meter import Meter

# Cells in a replica's pool thumbnail: a lane 1280 px wide at 720p shows each cell >= 8 px.
POOL_CELLS = 48
# The newest routed arrivals a frame carries (a seek shows the last few, not the whole past).
MAX_ARRIVALS_PER_FRAME = 64


@dataclass
class ReplicaSeries:
    """One replica's columns, a row per record (start_s ascending), and its first tokens."""

    num_gpu_blocks: int
    frontend_ms: float = 0.0  # the API server's time, added to TTFT as the summary adds it
    start_s: list[float] = field(default_factory=list)
    num_running: list[int] = field(default_factory=list)
    num_waiting: list[int] = field(default_factory=list)
    kv_usage: list[float] = field(default_factory=list)
    prefix_hits: list[int] = field(default_factory=list)  # cumulative, tokens
    prefix_queries: list[int] = field(default_factory=list)  # cumulative, tokens
    pool: list[bytes] = field(default_factory=list)  # percent used per cell
    first_token_s: list[float] = field(default_factory=list)  # ascending
    ttft_ms: list[float] = field(default_factory=list)
    used: np.ndarray = field(init=False)
    num_output: dict[str, int] = field(default_factory=dict)  # the live requests' tokens so far

    def __post_init__(self) -> None:
        self.used = np.zeros(max(self.num_gpu_blocks, 1), bool)

    def row(self, t: float) -> dict[str, Any]:
        """The replica as of simulated time t (its last record starting at or before t)."""
        i = bisect_right(self.start_s, t) - 1
        n = bisect_right(self.first_token_s, t)
        p99 = float(np.percentile(self.ttft_ms[:n], 99)) if n else None
        if i < 0:
            return {"num_running": 0, "num_waiting": 0, "kv_usage": 0.0,
                    "prefix_cache_hit_rate": None, "p99_ttft_ms": p99, "pool": [0] * POOL_CELLS}
        queries = self.prefix_queries[i]
        return {"num_running": self.num_running[i], "num_waiting": self.num_waiting[i],
                "kv_usage": round(self.kv_usage[i], 4),
                "prefix_cache_hit_rate": round(self.prefix_hits[i] / queries, 4) if queries
                else None,
                "p99_ttft_ms": None if p99 is None else round(p99, 3),
                "pool": list(self.pool[i])}


class FleetFrames:
    """Written by one thread (`add_record`, `add_routed`), read by another (`frame`)."""

    def __init__(self, specs: list[RequestSpec], num_gpu_blocks: list[int],
                 frontend_ms: Sequence[float] | None = None,
                 meters: Sequence[Meter] | None = None,
                 configs: Sequence[dict[str, Any]] | None = None) -> None:
        self._specs = {s.id: s for s in specs}
        self.replicas = [ReplicaSeries(n, f) for n, f in
                         zip(num_gpu_blocks, frontend_ms or [0.0] * len(num_gpu_blocks),
                             strict=True)]
        self.meters = list(meters or [])  # one per replica, or none
        self.configs = list(configs or [])  # each replica's engine config (its cache info)
        self.last_start_s = float("-inf")  # the latest record folded (they come in time order)
        self.routed: list[dict[str, Any]] = []
        self._routed_s: list[float] = []
        self._lock = threading.Lock()

    def add_routed(self, request_id: str, arrival_s: float, replica: int,
                   scores: tuple[float, ...], reason: str, pool: str | None = None) -> None:
        """`pool`: a P/D fleet's pool whose router decided (api/records/pd_frames.py)."""
        with self._lock:
            self.routed.append({"request_id": request_id, "arrival_s": arrival_s,
                                "replica": replica,
                                "scores": [round(float(x), 4) for x in scores],
                                "reason": reason, **({"pool": pool} if pool else {})})
            self._routed_s.append(arrival_s)

    def add_record(self, replica: int, rec: StepRecord) -> None:
        s = self.replicas[replica]
        hits, queries = self._lookups(s, rec)
        end_s = rec.time_s + rec.step_time_ms / 1000.0
        firsts = []
        for entry in rec.scheduled:
            if entry.sampled:
                if entry.id not in s.num_output:
                    spec = self._specs.get(entry.id)
                    if spec is not None:
                        firsts.append(since_arrival_ms(end_s, spec.arrival_s or 0.0,
                                                       s.frontend_ms))
                s.num_output[entry.id] = s.num_output.get(entry.id, 0) + 1
        pool = _pool_cells(s.used, rec)
        if self.meters:  # before the row: a position read off the rows is folded in the meter
            self.meters[replica].observe(normalize(rec.to_dict()))
        with self._lock:
            self.last_start_s = rec.time_s
            s.start_s.append(rec.time_s)
            s.num_running.append(len(rec.running))
            s.num_waiting.append(len(rec.waiting))
            s.kv_usage.append(rec.kv_usage)
            s.prefix_hits.append((s.prefix_hits[-1] if s.prefix_hits else 0) + hits)
            s.prefix_queries.append((s.prefix_queries[-1] if s.prefix_queries else 0) + queries)
            s.pool.append(pool)
            s.first_token_s.extend([end_s] * len(firsts))
            s.ttft_ms.extend(firsts)
        for rid in rec.finished:
            s.num_output.pop(rid, None)

    def _lookups(self, s: ReplicaSeries, rec: StepRecord) -> tuple[int, int]:
        """Prefix-cache hits and queried tokens of the requests this record admits, counted as
        vLLM's prefix_cache_queries/hits are (observability/meter.py's `_admit`)."""
        hits = queries = 0
        for rid in (*rec.new, *rec.resumed):
            spec = self._specs.get(rid)
            if spec is None:
                continue
            queries += spec.prompt_len + s.num_output.get(rid, 0)
            hits += int(rec.num_cached_tokens.get(rid, 0))
        return hits, queries

    def has_metrics(self) -> bool:
        """Whether the replicas are metered (GET /metrics shows their series)."""
        return bool(self.meters)

    def metric_views(self, model_name: str, engine: int, session: str,
                     max_model_len: int) -> list[EngineView]:
        """Each replica's vLLM metrics view, in lane order (as `positions` reads them)."""
        return replica_views(self.meters[:MAX_VIEW_REPLICAS], model_name, engine, session,
                             self.configs[:MAX_VIEW_REPLICAS], max_model_len)

    def positions(self, t: float) -> list[int]:
        """Each replica's last record starting at or before simulated time t (-1: none yet)."""
        with self._lock:
            return [bisect_right(s.start_s, t) - 1 for s in self.replicas]

    def frame(self, t: float, after_s: float | None) -> dict[str, Any]:
        """The fleet at simulated time t: a row per replica, and the arrivals routed in
        (after_s, t] (the newest MAX_ARRIVALS_PER_FRAME; after_s None: up to t)."""
        with self._lock:
            rows = [{"replica": k, **s.row(t)} for k, s in enumerate(self.replicas)]
            end = bisect_right(self._routed_s, t)
            start = 0 if after_s is None else bisect_right(self._routed_s, after_s)
            routed = self.routed[max(start, end - MAX_ARRIVALS_PER_FRAME):end]
        return {"time_s": t, "replicas": rows, "routed": routed}


def _pool_cells(used: np.ndarray, rec: StepRecord) -> bytes:
    """Marks the blocks this record freed and handed out (a finished request's table is freed
    after its last blocks were handed out), and the percent of each cell's blocks in use."""
    if rec.freed_blocks:
        used[list(rec.freed_blocks)] = False
    for blocks in rec.new_blocks.values():
        used[list(blocks)] = True
    for rid in rec.released:
        handed = rec.new_blocks.get(rid)
        if handed:
            used[list(handed)] = False
    cells = np.array_split(used[1:] if used.size > 1 else used, POOL_CELLS)
    return bytes(int(round(100 * c.mean())) if c.size else 0 for c in cells)
