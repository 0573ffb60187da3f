"""A session's run diagnosed for REST, in a worker process (api/jobs/pool.py) that streams the
records from the track's file: the records shown so far, the whole run (`full`, or nothing
shown yet) or a window of records (from_iter..to_iter, the overview's brush), with the
workload's specs for re-simulating each recommended knob."""

from __future__ import annotations

import asyncio
from typing import Any

from servescope.api.errors import SessionError
from servescope.api.reports import runs
from servescope.api.reports import work as job_work
from servescope.api.sessions.build import resolve
from servescope.api.sessions.session import Session
from servescope.api.sessions.track import Track
from servescope.api.uploads.store import Store
from servescope.core import metrics
from servescope.core.config import EngineConfig


async def diagnose_session(session: Session, store: Store, engine: int, check: bool,
                           full: bool, window: tuple[int, int] | None = None) -> dict[str, Any]:
    """diagnose_records' dict plus {engine, label, source, num_records, complete, window}."""
    built = session.built
    if built is None or not 0 <= engine < len(session.tracks):
        raise SessionError(f"engine must be 0..{len(session.tracks) - 1}", "engine", "not_found")
    (track,) = await runs.finish(session, engine)  # the summary is the ended engine's
    first, upto = window or (0, session.position[engine])
    if full or upto < 0:
        first, upto = 0, track.head
    if not 0 <= first <= upto <= track.head:
        raise SessionError(f"the window must lie in 0..{track.head} with from_iter <= to_iter",
                           "from_iter")
    config = EngineConfig.from_dict(built.engines[engine]["config"])
    resolved, _ = await resolve(built.workload, built.configs or [{}], store)
    whole = first == 0 and upto == track.head
    summary = dict(track.summary or {}) if whole else await asyncio.to_thread(
        window_summary, track, *track.store.span_s(first, upto))
    with runs.reading(track) as path:
        out = await session.jobs.call("diagnosis", job_work.diagnose, path, track.requests,
                                      config, resolved.specs, first, upto, summary,
                                      check and track.engine is not None)
    out.update({"engine": engine, "label": built.engines[engine]["label"],
                "source": built.source, "num_records": upto - first + 1,
                "complete": whole, "window": [first, upto]})
    return out


def window_summary(track: Track, start_s: float, end_s: float) -> dict[str, Any]:
    """The run's summary keys over the requests that finished inside [start_s, end_s]."""
    if track.engine is None:
        return {}
    done = [r for r in track.engine.done_requests
            if r.finish_time is not None and start_s <= r.finish_time <= end_s]
    return metrics.summarize(done, end_s - start_s, [], {})
