"""What feeds a track (api/sessions/track.py): a function that gives the next record (a recording's
as to_dict(), an engine's as its StepRecord), or a decode stretch of many, and None at the end."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from servescope.api.records.fleet_frames import FleetFrames
from servescope.core.decode_stretch import DecodeStretch
from servescope.core.engine import Engine
from servescope.core.fleet import RoutedArrival
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


def fleet_source(items: Iterator[RoutedArrival | tuple[int, StepRecord]], viewed: int,
                 frames: FleetFrames) -> Source:
    """The viewed replica's records out of a fleet's run (core/fleet.py's `Fleet.run()`: its
    routing decisions and every replica's (replica, record) in time order), folding every
    replica's records and the routed arrivals into `frames` on the way; None once the whole
    fleet has run, so the frames cover every replica to its end."""

    def next_record() -> StepRecord | None:
        for item in items:
            if not isinstance(item, tuple):  # a routing decision
                frames.add_routed(item.request_id, item.arrival_s, item.replica, item.scores,
                                  item.reason)
                continue
            replica, record = item
            frames.add_record(replica, record)
            if replica == viewed:
                return record
        return None

    return next_record
