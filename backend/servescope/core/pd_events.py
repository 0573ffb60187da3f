"""What a P/D fleet's run yields (core/pd_fleet.py PDFleet.run), in time order: each pool's
steps, each KV transfer when its bytes start moving, and each pool's routing decisions."""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass

from servescope.core.fleet import RoutedArrival
from servescope.core.kv_connector import Load
from servescope.core.records import StepRecord


@dataclass(frozen=True)
class PoolStep:
    pool: str  # "prefill" | "decode"
    replica: int
    record: StepRecord


@dataclass(frozen=True)
class Transfer:
    """One request's KV from its prefill replica to its decode replica."""

    request_id: str
    prefill_replica: int
    decode_replica: int
    num_blocks: int  # the decode-side blocks the load fills (past its local prefix hit)
    num_bytes: int
    ready_s: float  # its prefill ended
    start_s: float  # its bytes started moving (the decode side admitted it, the link free)
    done_s: float  # its KV is on the decode replica
    failed: bool
    num_tokens: int  # the prompt tokens it loads (vLLM's num_external_computed_tokens)

    @classmethod
    def of(cls, load: Load, decode_replica: int, ready_s: float) -> Transfer:
        return cls(load.request_id, load.prefill_replica, decode_replica, load.num_blocks,
                   load.num_bytes, ready_s, load.start_s, load.done_s, load.failed,
                   load.num_tokens)


@dataclass(frozen=True)
class PoolRouted:
    pool: str
    routed: RoutedArrival


PDEvent = PoolStep | Transfer | PoolRouted


def event_time(event: PDEvent) -> float:
    """When it happens: a step's start, a transfer's first byte, a routing's arrival."""
    if isinstance(event, PoolStep):
        return event.record.time_s
    if isinstance(event, Transfer):
        return event.start_s
    return event.routed.arrival_s


class EventQueue:
    """Events held until nothing earlier can still come (ties keep the order pushed)."""

    def __init__(self) -> None:
        self.heap: list[tuple[float, int, PDEvent]] = []
        self.num_pushed = 0

    def push(self, event: PDEvent) -> None:
        heapq.heappush(self.heap, (event_time(event), self.num_pushed, event))
        self.num_pushed += 1

    def before(self, at: float) -> Iterator[PDEvent]:
        """The events earlier than `at`, in time order (all of them: `at` inf)."""
        heap = self.heap
        while heap and heap[0][0] < at:
            yield heapq.heappop(heap)[2]
