"""Building StepRecords for replay: one constructor that fills what a source does not know, and
checked getters for record fields parsed from JSON."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from servescope.core.records import BlockEvent, ScheduledColumns, ScheduledEntry, StepRecord
from servescope.traces._io import parse_count, parse_seconds
from servescope.traces.errors import TraceFormatError, shown


def make_record(*, step: int, iter: int, time_s: float, step_time_ms: float,
                scheduled: Sequence[ScheduledEntry] | ScheduledColumns, num_free_blocks: int,
                num_usable_blocks: int, token_budget: int, max_num_seqs: int,
                **known: Any) -> StepRecord:
    """A StepRecord whose unknown fields are empty: no arrivals, no block deltas, etc."""
    fields: dict[str, Any] = dict(
        arrivals=(), new=(), resumed=(), preempted=(), finished=(), released=(), rejected=(),
        new_blocks={}, freed_blocks=(), block_events=(), num_cached_tokens={},
        running=tuple(scheduled.ids if isinstance(scheduled, ScheduledColumns)
                      else (e.id for e in scheduled)), waiting=(), kv_waste={})
    fields.update(known)
    if "released" not in known:
        fields["released"] = fields["finished"]
    return StepRecord(step=step, iter=iter, time_s=time_s, step_time_ms=step_time_ms,
                      columns=(scheduled if isinstance(scheduled, ScheduledColumns)
                               else ScheduledColumns.join(list(scheduled))),
                      num_free_blocks=num_free_blocks, num_usable_blocks=num_usable_blocks,
                      token_budget=token_budget, max_num_seqs=max_num_seqs, **fields)


class Fields:
    """Typed access to one JSON record; every error names the line and the field."""

    def __init__(self, row: dict[str, Any], line: int) -> None:
        self.row = row
        self.line = line

    def get(self, key: str, default: Any = ...) -> Any:
        if key in self.row:
            return self.row[key]
        if default is ...:
            raise TraceFormatError(self.line, key, "missing")
        return default

    def count(self, key: str, default: Any = ...) -> int:
        return parse_count(self.get(key, default), self.line, key)

    def seconds(self, key: str, default: Any = ...) -> float:
        return parse_seconds(self.get(key, default), self.line, key)

    def count_value(self, value: Any, key: str) -> int:
        return parse_count(value, self.line, key)

    def ids(self, key: str) -> tuple[str, ...]:
        value = self.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise TraceFormatError(self.line, key, "expected a list of request ids")
        return tuple(value)

    def mapping(self, key: str) -> dict[str, Any]:
        value = self.get(key, {})
        if not isinstance(value, dict):
            raise TraceFormatError(self.line, key, "expected an object")
        return value

    def block_ids(self, value: Any, key: str) -> tuple[int, ...]:
        if not isinstance(value, list):
            raise TraceFormatError(self.line, key, "expected a list of block ids")
        return tuple(parse_count(v, self.line, key) for v in value)

    def objects(self, key: str) -> list[dict[str, Any]]:
        value = self.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise TraceFormatError(self.line, key, "expected a list of objects")
        return value

    def event(self, item: dict[str, Any]) -> BlockEvent:
        kind = {"BlockStored": "stored", "BlockRemoved": "removed"}.get(item.get("type", ""))
        if kind is None:
            raise TraceFormatError(self.line, "kv_events.type", "expected BlockStored or "
                                   f"BlockRemoved, got {shown(item.get('type'))}")
        req = item.get("req")
        return BlockEvent(kind, self.block_ids(item.get("block_ids", []), "kv_events.block_ids"),
                          None if req is None else str(req))
