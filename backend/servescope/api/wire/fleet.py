"""Protocol v1's fleet messages (docs/protocol.md, "The fleet"): what a session running a fleet
(many replicas behind a router, core/fleet.py) says of it beside the viewed replica's records,
and the drill-down a driver sends to view another replica."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from servescope.api.wire.message import Message
from servescope.api.wire.pd import MAX_KV_WAIT_IDS, KVLinkInfo, PoolInfo, PoolName, TransferRow

# The most replicas a session's fleet runs: a lane each stays readable at 1280x720 (16 lanes
# of 40 px under the controls).
MAX_VIEW_REPLICAS = 16


class FleetInfo(BaseModel):
    """An engine of init that is a fleet: how many replicas, the router, and which replica's
    block-level records the session streams."""

    model_config = ConfigDict(extra="forbid")
    replicas: int = Field(ge=1, le=MAX_VIEW_REPLICAS)
    router: str
    scrape_interval_ms: float | None  # how stale the router's view of the replicas is
    replica: int = Field(ge=0)  # the viewed replica
    no_seek: str | None = None  # why a seek far ahead waits for the fleet to run there
    # P/D (api/wire/pd.py): `replicas` counts both pools' lanes; `replica` counts within the
    # viewed replica's `pool`
    pools: dict[PoolName, PoolInfo] | None = None
    pool: PoolName | None = None
    kv_link: KVLinkInfo | None = None
    pd_threshold: int | None = None  # llm-d's decider: fewer uncached tokens prefill locally


class ReplicaRow(BaseModel):
    """One replica as of the frame's time (api/records/fleet_frames.py)."""

    model_config = ConfigDict(extra="forbid")
    replica: int
    num_running: int
    num_waiting: int
    kv_usage: float  # 0..1
    prefix_cache_hit_rate: float | None  # hit tokens / queried tokens so far; null: none queried
    p99_ttft_ms: float | None  # over the requests whose first token came so far; null: none
    pool: list[int] = Field(max_length=64)  # percent of each cell's blocks in use
    # P/D, a decode replica: the requests admitted whose remote KV is still in flight (vLLM's
    # WAITING_FOR_REMOTE_KVS), how many and the first few
    num_waiting_for_kv: int | None = None
    waiting_for_kv: list[str] | None = Field(default=None, max_length=MAX_KV_WAIT_IDS)


class RoutedArrival(BaseModel):
    """A request the router sent: where, each replica's score (higher = preferred), and why."""

    model_config = ConfigDict(extra="forbid")
    request_id: str
    arrival_s: float
    replica: int
    scores: list[float]
    reason: str
    pool: PoolName | None = None  # P/D: the pool whose router decided


class FleetFrame(Message):
    """The fleet of engine `engine` at simulated time `time_s` (the session's), sent when it
    moves: every replica's row, and the arrivals routed since the frame before (after a seek or
    a new init: the newest few up to time_s). A P/D fleet's rows are by pool (`pools`, as the
    summary's), `replicas` empty, and its KV transfers about time_s come along."""

    type: Literal["fleet"] = "fleet"
    engine: int = Field(ge=0, le=3)
    time_s: float
    replicas: list[ReplicaRow] = Field(max_length=MAX_VIEW_REPLICAS)
    routed: list[RoutedArrival]
    pools: dict[PoolName, list[ReplicaRow]] | None = None  # P/D: each pool's rows
    transfers: list[TransferRow] | None = None  # P/D: queued, moving or lately done at time_s

    @model_validator(mode="after")
    def rows(self) -> FleetFrame:
        if bool(self.replicas) == (self.pools is not None):
            raise ValueError("a fleet frame has replicas, or (P/D) pools, not both")
        return self


class ViewReplica(Message):
    """Drill-down: stream replica `replica`'s block-level records for engine `engine` (the
    session keeps its simulated time and whether it plays)."""

    type: Literal["replica"]
    engine: int = Field(default=0, ge=0, le=3)
    replica: int = Field(ge=0, lt=MAX_VIEW_REPLICAS)
    pool: PoolName | None = None  # P/D: which pool's replica (required there)
