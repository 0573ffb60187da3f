"""What feeds a track (api/sessions/track.py): a function that gives the next record (a recording's
as to_dict(), an engine's as its StepRecord), or a decode stretch of many, and None at the end."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from servescope.core.decode_stretch import DecodeStretch
from servescope.core.engine import Engine
from servescope.core.records import StepRecord

Source = Callable[[], dict[str, Any] | StepRecord | DecodeStretch | None]


def engine_source(engine: Engine, runs: bool = True) -> Source:
    """The engine's records through its fast-forward (`Engine.advance()`): a quiet decode
    stretch comes as one DecodeStretch, which the track stores in bulk, and a step as its record
    (api/records/step_pack.py); with `runs` False each run is expanded into its records, one per
    call, each as to_dict() (the per-record path, to check the others against)."""
    if not runs:
        records = engine.run()
        return lambda: None if (rec := next(records, None)) is None else rec.to_dict()

    return engine.advance


def replay_source(records: list[dict[str, Any]]) -> Source:
    it = iter(records)
    return lambda: next(it, None)
