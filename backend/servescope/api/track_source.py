"""What feeds a track (api/track.py): a function that gives the next record as to_dict(), or a
decode run of many, and None at the end; from a simulated engine or a recording's records."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from servescope.core.decode_run import DecodeRun
from servescope.core.engine import Engine
from servescope.core.records import StepRecord

Source = Callable[[], dict[str, Any] | DecodeRun | None]


def engine_source(engine: Engine, runs: bool = True) -> Source:
    """The engine's records through its fast-forward (`Engine.advance()`): a quiet decode
    stretch comes as one DecodeRun, which the track stores in bulk; with `runs` False each run
    is expanded into its records, one per call (the per-record path, to check it against)."""
    if not runs:
        records = engine.run()
        return lambda: None if (rec := next(records, None)) is None else rec.to_dict()

    def next_item() -> dict[str, Any] | DecodeRun | None:
        item = engine.advance()
        return item.to_dict() if isinstance(item, StepRecord) else item
    return next_item


def replay_source(records: list[dict[str, Any]]) -> Source:
    it = iter(records)
    return lambda: next(it, None)
