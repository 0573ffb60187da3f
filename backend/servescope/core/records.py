"""StepRecord: what one engine step decided and did. Simulation and replay both produce these.

Block tables travel as deltas: `new_blocks` lists the blocks appended to each table this step
(prefix-cache hits included), and a table is dropped when its request is preempted or finishes.
`BlockTables` folds a record stream back into full tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np


class ScheduledEntry(NamedTuple):
    """One request's share of a step: `n` tokens starting at position `start`."""

    id: str
    n: int
    start: int  # num_computed_tokens before the step
    sampled: bool  # the step emits a token for this request
    prefill: bool  # the tokens are prompt (or recomputed) tokens, not one decode token


@dataclass(frozen=True, eq=False)
class ScheduledColumns:
    """A step's plan as columns (one row per scheduled request, in scheduling order)."""

    ids: list[str]
    n: np.ndarray
    start: np.ndarray
    sampled: np.ndarray
    prefill: np.ndarray

    @classmethod
    def join(cls, parts: Sequence[ScheduledEntry | tuple[list[str], np.ndarray]],
             ) -> ScheduledColumns:
        """Single entries and decode chunks ((ids, start): one token each) in order, written
        into columns sized up front (no small arrays to concatenate)."""
        ids: list[str] = []
        for part in parts:
            if isinstance(part, ScheduledEntry):
                ids.append(part.id)
            else:
                ids.extend(part[0])
        num_rows = len(ids)
        n, start = np.ones(num_rows, np.int64), np.empty(num_rows, np.int64)
        sampled, prefill = np.ones(num_rows, bool), np.zeros(num_rows, bool)
        row = 0
        for part in parts:
            if isinstance(part, ScheduledEntry):
                _, n[row], start[row], sampled[row], prefill[row] = part
                row += 1
            else:
                start[row:row + len(part[0])] = part[1]
                row += len(part[0])
        return cls(ids, n, start, sampled, prefill)

    def entries(self) -> tuple[ScheduledEntry, ...]:
        return tuple(ScheduledEntry(*row) for row in zip(
            self.ids, self.n.tolist(), self.start.tolist(), self.sampled.tolist(),
            self.prefill.tolist(), strict=True))


class BlockEvent(NamedTuple):
    """A prefix-cache event: kind is 'stored' (blocks got a hash) or 'removed' (evicted)."""

    kind: str
    block_ids: tuple[int, ...]
    request_id: str | None = None


@dataclass(frozen=True, eq=False)
class StepRecord:
    step: int  # step clock: the loop counter that arrival_step refers to
    iter: int  # index of this record in the run
    time_s: float  # time clock at the start of the step
    step_time_ms: float
    arrivals: tuple[str, ...]
    columns: ScheduledColumns  # the plan, in scheduling order
    new: tuple[str, ...]
    resumed: tuple[str, ...]
    preempted: tuple[str, ...]
    finished: tuple[str, ...]
    released: tuple[str, ...]  # tables freed in the update (finished; static: at batch end)
    rejected: tuple[tuple[str, str], ...]  # (id, reason)
    new_blocks: dict[str, tuple[int, ...]]
    freed_blocks: tuple[int, ...]  # returned to the free queue during the step, in order; a
    # block freed by a preemption may be handed out again in the same step (see new_blocks)
    block_events: tuple[BlockEvent, ...]
    num_cached_tokens: dict[str, int]  # prefix-cache hit of each new or resumed request
    running: tuple[str, ...]  # after scheduling
    waiting: tuple[str, ...]  # after scheduling
    num_free_blocks: int  # after the step's update
    num_usable_blocks: int
    token_budget: int
    max_num_seqs: int
    kv_waste: dict[str, int] = field(default_factory=dict)  # token slots by Fig. 2 category
    # speculative decoding (None without): drafts scheduled per request (inside its n), and
    # drafts its verify accepted (a request missing: its output was discarded, -1)
    drafts: dict[str, int] | None = None
    accepted: dict[str, int] | None = None
    # P/D decode side (core/kv_connector.py): after scheduling, the requests admitted with
    # their remote KV still in flight (vLLM's WAITING_FOR_REMOTE_KVS; in `waiting` too), and
    # those whose KV finished arriving (or failed to) since the last record
    waiting_for_kv: tuple[str, ...] = ()
    kv_arrived: tuple[str, ...] = ()

    @cached_property
    def scheduled(self) -> tuple[ScheduledEntry, ...]:
        return self.columns.entries()

    @property
    def num_scheduled_tokens(self) -> int:
        return int(self.columns.n.sum())

    @property
    def kv_usage(self) -> float:
        return 1.0 - self.num_free_blocks / self.num_usable_blocks

    def event_dicts(self) -> list[dict[str, Any]]:
        """The prefix-cache events as the reference traces write them."""
        return [{"type": "BlockStored" if ev.kind == "stored" else "BlockRemoved",
                 "block_ids": list(ev.block_ids), "req": ev.request_id}
                for ev in self.block_events]

    def to_dict(self, events: bool = True) -> dict[str, Any]:
        """Plain data with the reference traces' field names, for JSONL and the wire (with
        `events` False, "kv_events" is left empty: api/records/step_pack.py writes them itself)."""
        return {
            "step": self.step,
            "iter": self.iter,
            "time_s": round(self.time_s, 9),
            "step_time_ms": round(self.step_time_ms, 6),
            "arrivals": list(self.arrivals),
            "scheduled": self._scheduled_dicts(),
            "new": list(self.new),
            "resumed": list(self.resumed),
            "preempted": list(self.preempted),
            "finished": list(self.finished),
            "released": list(self.released),
            "rejected": [{"id": i, "reason": r} for i, r in self.rejected],
            "new_blocks": {k: list(v) for k, v in self.new_blocks.items()},
            "freed_blocks": list(self.freed_blocks),
            "kv_events": self.event_dicts() if events else [],
            "num_cached_tokens": dict(self.num_cached_tokens),
            "running": list(self.running),
            "waiting": list(self.waiting),
            "num_free_blocks": self.num_free_blocks,
            "num_usable_blocks": self.num_usable_blocks,
            "kv_usage": round(self.kv_usage, 6),
            "token_budget": self.token_budget,
            "max_num_seqs": self.max_num_seqs,
            "kv_waste": dict(self.kv_waste),
            **({"waiting_for_kv": list(self.waiting_for_kv), "kv_arrived": list(self.kv_arrived)}
               if self.waiting_for_kv or self.kv_arrived else {}),
        }


    def _scheduled_dicts(self) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = [{"id": e.id, "n": e.n, "start": e.start, "sampled": e.sampled,
                 "kind": "prefill" if e.prefill else "decode"} for e in self.scheduled]
        drafts, accepted = self.drafts, self.accepted
        if drafts is not None:  # only with speculation: other records keep their shape
            for row, e in zip(rows, self.scheduled, strict=True):
                row["drafts"] = drafts.get(e.id, 0)
                row["accepted"] = -1 if accepted is None else accepted.get(e.id, -1)
        return rows


class BlockTables:
    """Folds records into the block tables of running requests (after each step's schedule).
    Under async scheduling step N's update comes after step N + 1's schedule, so the tables it
    releases stay in step N + 1's tables (a speculative verify that finishes a request in step
    N even finds blocks appended for it by step N + 1's schedule, which vLLM's scheduler had
    already planned); `held` are those released by the update still to come."""

    def __init__(self, async_scheduling: bool = False) -> None:
        self.tables: dict[str, list[int]] = {}
        self.async_scheduling = async_scheduling
        self.held: tuple[str, ...] = ()

    def apply(self, record: StepRecord) -> dict[str, list[int]]:
        for rid in record.preempted:
            self.tables.pop(rid, None)
        for rid, blocks in record.new_blocks.items():
            self.tables.setdefault(rid, []).extend(blocks)
        return self.tables

    def after_update(self, record: StepRecord) -> None:
        """The update that follows the schedule just applied: `record`'s own (sync), or the
        previous record's (async; `record`'s is held until the next schedule is applied)."""
        released = record.released
        if self.async_scheduling:
            self.held, released = released, self.held
        for rid in released:
            self.tables.pop(rid, None)
