"""Replaying a recording with our Engine, and the per-step views both sides are compared on.

A view is what vLLM decided and what its cache looked like: the plan in order (id, n, start,
sampled, kind), preemptions, finishes, the block tables after scheduling, the free block count
after the update, the queues, prefix-cache hits, freed blocks and cache events.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.request import RequestSpec
from servescope.traces.recording import FORMAT

VIEW_KEYS = ("step", "scheduled", "preempted", "finished", "block_tables", "num_free_blocks",
             "running", "waiting", "new", "resumed", "num_cached_tokens", "freed_blocks",
             "kv_events")


def read_recording(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    head = json.loads(lines[0])
    if head.get("format") != FORMAT:
        raise ValueError(f"{path}: not a {FORMAT} recording")
    return head, [json.loads(line) for line in lines[1:]]


def specs_from_header(head: dict[str, Any]) -> list[RequestSpec]:
    return [RequestSpec(r["id"], r["prompt_len"], r["output_len"],
                        arrival_step=r.get("arrival_step"),
                        arrival_s=None if r.get("arrival_step") is not None else r["arrival_s"],
                        prefix=tuple((str(k), int(n)) for k, n in r.get("prefix", ())),
                        priority=r.get("priority", 0),
                        spec_accepted=(None if r.get("spec_accepted") is None
                                       else tuple(r["spec_accepted"])))
            for r in head["requests"]]


def views(rows: Iterable[dict[str, Any]], async_scheduling: bool = False,
          ) -> Iterator[dict[str, Any]]:
    """Per-step views of to_dict()-shaped records, folding `new_blocks` into block tables.
    Under async scheduling step N's update (dropping its `released` tables) comes after step
    N + 1's schedule, so those tables are still in step N + 1's view."""
    tables: dict[str, list[int]] = {}
    held: list[str] = []  # released by the update still to come (async)
    for row in rows:
        for rid in row["preempted"]:
            tables.pop(rid, None)
        for rid, blocks in row["new_blocks"].items():
            tables.setdefault(rid, []).extend(blocks)
        yield {
            "step": row["step"],
            "scheduled": [(s["id"], s["n"], s["start"], s["sampled"], s["kind"])
                          for s in row["scheduled"]],
            "preempted": list(row["preempted"]),
            "finished": sorted(row["finished"]),
            "block_tables": {k: list(v) for k, v in tables.items()},
            "num_free_blocks": row["num_free_blocks"],
            "running": list(row["running"]), "waiting": list(row["waiting"]),
            "new": list(row["new"]), "resumed": list(row["resumed"]),
            "num_cached_tokens": dict(row["num_cached_tokens"]),
            "freed_blocks": list(row["freed_blocks"]),
            "kv_events": [(e["type"], list(e["block_ids"])) for e in row["kv_events"]],
        }
        released = row.get("released", row["finished"])
        if async_scheduling:
            held, released = released, held
        for rid in released:
            tables.pop(rid, None)


def replay(head: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Our engine on the recording's config and requests, as to_dict() rows."""
    engine = Engine(EngineConfig.from_dict(head["config"]), specs_from_header(head))
    for record in engine.run():
        yield record.to_dict()


def first_difference(ours: list[dict[str, Any]], theirs: list[dict[str, Any]],
                     keys: Iterable[str] = VIEW_KEYS) -> str | None:
    keys = tuple(keys)
    for i, (a, b) in enumerate(zip(ours, theirs, strict=False)):
        for key in keys:
            if a[key] != b[key]:
                return (f"record {i} (step {b['step']}), {key}: "
                        f"ours {str(a[key])[:400]} recorded {str(b[key])[:400]}")
    if len(ours) != len(theirs):
        return f"ours has {len(ours)} steps, the recording {len(theirs)}"
    return None
