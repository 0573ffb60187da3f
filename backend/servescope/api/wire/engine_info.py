"""What protocol v1's init says of each engine a session runs (its config, KV pool, how the cost
model sized it, what the run leaves out, a fleet's replicas) and of the uploaded trace it runs
(docs/protocol.md, "Server to client": init)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from servescope.api.wire.fleet import FleetInfo


class MemoryBreakdown(BaseModel):
    """How the cost model sized a priced engine's KV pool, per GPU (cost_model.memory_breakdown):
    budget_gib = weights_gib + non_torch_gib + activation_gib + kv_cache_gib, and
    num_gpu_blocks = floor(kv_cache_gib / block_bytes), the null block 0 included."""

    model_config = ConfigDict(extra="forbid")
    total_gib: float  # the GPU's visible memory
    budget_gib: float  # gpu_memory_utilization x total_gib
    weights_gib: float
    non_torch_gib: float
    activation_gib: float  # the profile run of max_num_batched_tokens tokens
    kv_cache_gib: float
    kv_bytes_per_token: int
    block_bytes: int
    num_gpu_blocks: int  # what the memory gives; the pool's own size is EngineInfo's
    kv_capacity_tokens: int


class EngineInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: str
    config: dict[str, Any]
    num_gpu_blocks: int
    block_size: int
    num_usable_blocks: int
    memory_breakdown: MemoryBreakdown | None  # null: not priced (placeholder step time)
    not_modelled: list[str] = Field(default_factory=list)  # what of the run is left out
    # where a speculating run's accepted drafts come from, in the summary's words (recorded
    # spec_accepted, model: ..., recorded: a replayed recording); none: no speculation
    acceptance_source: str = "none"
    fleet: FleetInfo | None = None  # a fleet's replicas and router (api/wire/fleet.py)


class TraceInfo(BaseModel):
    """An uploaded trace the session runs: its name, and what it does and does not record."""

    model_config = ConfigDict(extra="forbid")
    trace_id: str
    filename: str | None
    format: str
    kind: Literal["requests", "steps"]
    num_rows: int
    skipped: dict[str, int]
    notes: list[str]
    unknown: list[str]  # what the format does not record (the views say so)
    source: str | None  # a servescope-steps recording's own source: simulated | recorded
    measured: dict[str, float | int] | None  # a benchmark's measured results, summary keys
