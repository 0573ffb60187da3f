"""Loading vLLM reference recordings (workload, config, trace) as per-step views of our run and
of vLLM's, for servescope.capture.replay.first_difference to compare."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from servescope.cli._scenario import load_workload
from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.records import BlockTables, StepRecord


def run_case(directory: Path, name: str, config: EngineConfig | None = None,
             ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(ours, theirs): per-step comparable views of our run and of vLLM's trace.

    `name` is a case (`b_small_tight_kv`) or its async recording (`b_small_tight_kv.async`),
    whose workload is the case's; `config` replaces the recording's own.
    """
    if config is None:
        config = EngineConfig.from_dict(json.loads((directory / f"{name}.config.json")
                                                   .read_text()))
    workload = name.removesuffix(".async")
    engine = Engine(config, load_workload(directory / f"{workload}.workload.json"))
    ours = []
    for record, tables in _folded(engine):
        view = {
            "step": record.step,
            "scheduled": [(e.id, e.n) for e in record.scheduled],
            "preempted": list(record.preempted),
            "finished": sorted(record.finished),
            "block_tables": {k: list(v) for k, v in tables.items()},
            "num_free_blocks": record.num_free_blocks,
            "running": list(record.running),
            "waiting": list(record.waiting),
            "admitted": [(e.id, e.id in record.resumed, record.num_cached_tokens[e.id])
                         for e in record.scheduled if e.id in record.num_cached_tokens],
            "stored": [list(ev.block_ids) for ev in record.block_events if ev.kind == "stored"],
            "removed": sum(len(ev.block_ids) for ev in record.block_events
                           if ev.kind == "removed"),
        }
        ours.append(view)
    theirs = []
    for line in (directory / f"{name}.trace.jsonl").read_text().splitlines():
        row = json.loads(line)
        theirs.append({
            "step": row["step"],
            "scheduled": [(s["id"], s["n"]) for s in row["scheduled"]],
            "preempted": row["preempted"],
            "finished": sorted(row["finished"]),
            "block_tables": row["block_tables"],
            "num_free_blocks": row["num_free_blocks"],
            "running": row["running"],
            "waiting": row["waiting"],
            "admitted": [(s["id"], bool(s.get("resumed")), s.get("num_cached_tokens", 0))
                         for s in row["scheduled"] if s.get("new") or s.get("resumed")],
            **_events(row),
        })
    return ours, theirs


def _folded(engine: Engine) -> Iterator[tuple[StepRecord, dict[str, list[int]]]]:
    """Each record with the block tables after its schedule. Under async scheduling step N's
    update (its frees) comes after step N + 1's schedule."""
    tables = BlockTables(engine.config.async_scheduling)
    for record in engine.run():
        yield record, tables.apply(record)
        tables.after_update(record)


def _events(row: dict[str, Any]) -> dict[str, Any]:
    if "kv_events" not in row:
        return {}
    events = row["kv_events"]
    return {
        "stored": [e["block_ids"] for e in events if e["type"] == "BlockStored"],
        "removed": sum(len(e.get("block_ids") or [0]) for e in events
                       if e["type"] == "BlockRemoved"),
    }
