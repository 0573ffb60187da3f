"""A P/D fleet's story for the explorer (core/pd_fleet.py's record stream): both pools'
replicas folded as a fleet's are (api/records/fleet_frames.py, one lane a replica, prefill
lanes first), each decode replica's requests waiting for remote KV, and the KV transfers, read
as a frame at any simulated time: each pool's rows, the routed arrivals with their pool, and
the transfers queued, moving or lately done."""

from __future__ import annotations

import threading
from bisect import bisect_right, insort
from collections.abc import Iterator, Sequence
from typing import Any

from servescope.api.records.fleet_frames import FleetFrames
from servescope.api.records.pd_meters import fold_event
from servescope.api.records.track_source import Source
from servescope.api.wire.pd import MAX_KV_WAIT_IDS, POOLS, TransferRow
from servescope.core.pd_events import PoolRouted, PoolStep, Transfer
from servescope.core.records import StepRecord
from servescope.core.request import RequestSpec
from servescope.observability.families import EngineView
from servescope.observability.pd import PDMeters, pd_views

# The transfers a frame carries: those about its time, newest first. A link's queue is rarely
# deeper than a handful; 32 rows stay readable in the view's link column at 720p.
MAX_TRANSFERS_PER_FRAME = 32
# Done transfers a frame keeps showing (their last moments, so a short one is seen at all).
DONE_PER_FRAME = 6
# How far back (in transfers ordered by ready_s) a frame looks for ones still under way.
SCAN_BACK = 512
TRANSFER_KEYS = tuple(TransferRow.model_fields)


class PDFrames(FleetFrames):
    """Lanes 0..P-1 are the prefill replicas, P..P+D-1 the decode ones. Written by the track's
    thread (`add_step`, `add_transfer`, `add_routed`), read by the loop (`frame`)."""

    def __init__(self, specs: list[RequestSpec], num_replicas: dict[str, int],
                 num_gpu_blocks: list[int], frontend_ms: Sequence[float],
                 meters: PDMeters) -> None:
        """`meters`: every engine's vLLM metrics (GET /metrics), folded from the run's
        events by `pd_source` before the frames show them."""
        super().__init__(specs, num_gpu_blocks, frontend_ms)
        self.pd_meters = meters
        self.num_replicas = dict(num_replicas)
        self.kv_waits: list[list[tuple[str, ...]]] = [[] for _ in num_gpu_blocks]
        self.transfers: list[tuple[float, int, dict[str, Any]]] = []  # (ready_s, seq, row)
        self.pd_lock = threading.Lock()

    def lane(self, pool: str, replica: int) -> int:
        return replica + (self.num_replicas["prefill"] if pool == "decode" else 0)

    def add_step(self, pool: str, replica: int, rec: StepRecord) -> None:
        lane = self.lane(pool, replica)
        with self.pd_lock:  # first, so a row the base shows always has its waits
            self.kv_waits[lane].append(tuple(rec.waiting_for_kv))
        self.add_record(lane, rec)

    def add_transfer(self, transfer: Transfer) -> None:
        row = {k: getattr(transfer, k) for k in TRANSFER_KEYS}
        with self.pd_lock:
            insort(self.transfers, (transfer.ready_s, len(self.transfers), row))

    def frame(self, t: float, after_s: float | None) -> dict[str, Any]:
        """The fleet frame (FleetFrames.frame) by pool, with the transfers about time t."""
        base = super().frame(t, after_s)
        positions = self.positions(t)
        with self.pd_lock:
            waits = [w[i] if 0 <= i < len(w) else () for w, i in zip(self.kv_waits, positions,
                                                                      strict=True)]
            transfers = self.transfers_at(t)
        first = self.num_replicas["prefill"]
        pools: dict[str, list[dict[str, Any]]] = {name: [] for name in POOLS}
        for lane, row in enumerate(base["replicas"]):
            if lane < first:
                pools["prefill"].append(row)
                continue
            pools["decode"].append({**row, "replica": lane - first,
                                    "num_waiting_for_kv": len(waits[lane]),
                                    "waiting_for_kv": list(waits[lane][:MAX_KV_WAIT_IDS])})
        return {**base, "replicas": [], "pools": pools, "transfers": transfers}

    def has_metrics(self) -> bool:
        return True

    def metric_views(self, model_name: str, engine: int, session: str,
                     max_model_len: int) -> list[EngineView]:
        """Every engine's view, labelled with its pool and replica, in lane order."""
        return pd_views(self.pd_meters, model_name, engine, session, max_model_len)

    def transfers_at(self, t: float) -> list[dict[str, Any]]:
        """Ready by t and not done (queued or moving), then the few done lately; under the
        lock."""
        end = bisect_right(self.transfers, (t, float("inf")))
        live: list[dict[str, Any]] = []
        done: list[dict[str, Any]] = []
        for _, _, row in reversed(self.transfers[max(0, end - SCAN_BACK):end]):
            if row["done_s"] > t:
                live.append(row)
            elif len(done) < DONE_PER_FRAME:
                done.append(row)
            if len(live) >= MAX_TRANSFERS_PER_FRAME:
                break
        return (live + done)[:MAX_TRANSFERS_PER_FRAME]


def pd_source(events: Iterator[Any], viewed: int, frames: PDFrames) -> Source:
    """The viewed lane's records out of a P/D fleet's run (PDFleet.run(): PoolStep, Transfer
    and PoolRouted in time order), folding every event into `frames` on the way; None once the
    whole fleet has run."""

    def next_record() -> StepRecord | None:
        for event in events:
            fold_event(frames.pd_meters, event)  # first: a row the frames show is metered
            if isinstance(event, PoolStep):
                frames.add_step(event.pool, event.replica, event.record)
                if frames.lane(event.pool, event.replica) == viewed:
                    return event.record
            elif isinstance(event, Transfer):
                frames.add_transfer(event)
            elif isinstance(event, PoolRouted):
                r = event.routed
                frames.add_routed(r.request_id, r.arrival_s, r.replica, r.scores, r.reason,
                                  pool=event.pool)
        return None

    return next_record
