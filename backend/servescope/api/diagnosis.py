"""A session's run diagnosed for REST: the records shown so far (or the whole run when nothing
has been shown yet, or `full`), the workload's specs for re-simulating each recommended knob."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from servescope.api import runs
from servescope.api.build import resolve
from servescope.api.session import Session, SessionError
from servescope.api.store import Store
from servescope.core.config import EngineConfig
from servescope.scenarios.diagnosis_check import diagnose_records
from servescope.traces.steps_servescope import record_from_dict


async def diagnose_session(session: Session, store: Store, engine: int, check: bool,
                           full: bool) -> dict[str, Any]:
    """diagnose_records' dict plus {engine, label, source, num_records, complete}."""
    built = session.built
    if built is None or not 0 <= engine < len(session.tracks):
        raise SessionError(f"engine must be 0..{len(session.tracks) - 1}", "engine", "not_found")
    track = session.tracks[engine]
    upto = session.position[engine]
    if full or upto < 0:
        await runs.finish(session, engine)
        upto = track.head
    rows = list(itertools.islice(track.records(), upto + 1))
    complete = track.done and upto == track.head
    summary = dict(track.summary or {}) if complete else (
        track.engine.summary() if track.engine is not None else {})
    config = EngineConfig.from_dict(built.engines[engine]["config"])
    resolved, _ = await resolve(built.workload, built.configs or [{}], store)
    records = [record_from_dict(row, k + 1) for k, row in enumerate(rows)]
    out = await asyncio.to_thread(diagnose_records, config, resolved.specs, records, summary,
                                  None, check and track.engine is not None)
    out.update({"engine": engine, "label": built.engines[engine]["label"],
                "source": built.source, "num_records": len(records), "complete": complete})
    return out
