"""Protocol v1's P/D words (docs/protocol.md, "The fleet"): a fleet frame of a P/D session
(core/pd_fleet.py: a prefill pool and a decode pool joined by KV links) names each row's and
each routed arrival's pool, and carries the KV transfers about the frame's time."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

PoolName = Literal["prefill", "decode"]
POOLS: tuple[PoolName, ...] = ("prefill", "decode")
# The ids a decode row lists as waiting for remote KV: a lane shows a few, the count says all.
MAX_KV_WAIT_IDS = 16


class PoolInfo(BaseModel):
    """One pool of init's fleet info: how many replicas (lanes) and its router."""

    model_config = ConfigDict(extra="forbid")
    replicas: int = Field(ge=1)
    router: str


class KVLinkInfo(BaseModel):
    """The link each (prefill, decode) replica pair transfers over (core/kv_link.py)."""

    model_config = ConfigDict(extra="forbid")
    kind: str
    gbps: float  # one GPU's bandwidth, one direction, GB/s
    latency_ms: float


class TransferRow(BaseModel):
    """One KV handoff (core/pd_fleet.py's Transfer): prefill replica -> decode replica, queued
    from ready_s (the prefill's end) to start_s (bytes move), done at done_s."""

    model_config = ConfigDict(extra="forbid")
    request_id: str
    prefill_replica: int
    decode_replica: int
    num_blocks: int
    num_bytes: int
    ready_s: float
    start_s: float
    done_s: float
    failed: bool
