"""A session's whole run binned for the overview strip, latency percentiles of a window, and
the request timeline of a window (density by state, or rows)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Response

from servescope.api.errors import SessionError
from servescope.api.reports import runs, strip
from servescope.api.reports.timeline import StoredRun, timeline
from servescope.api.routes._lookup import BuiltSessionDep, http_error

router = APIRouter(prefix="/api", tags=["overview"])
Engine = Annotated[int, Query(ge=0, le=3)]
Seconds = Annotated[float | None, Query(ge=0.0, allow_inf_nan=False)]


@router.get("/sessions/{session_id}/overview", response_model=dict[str, Any])
async def run_overview(session: BuiltSessionDep, engine: Engine = 0,
                       bins: Annotated[int, Query(ge=1, le=4000)] = 600) -> Response:
    """Every stored record so far, in `bins` bins of simulated time (see
    api/reports/overview.py); one job, and one JSON text, for every request asking the same of
    the same run."""
    try:
        return Response(await strip.run_overview(session, engine, bins),
                        media_type="application/json")
    except SessionError as err:
        raise http_error(err) from err


@router.get("/sessions/{session_id}/percentiles", response_model=dict[str, Any])
async def run_percentiles(session: BuiltSessionDep, engine: Engine = 0,
                          start_s: Seconds = None, end_s: Seconds = None) -> Response:
    """TTFT, TPOT, ITL, E2E at p50/p90/p95/p99 over requests finished in [start_s, end_s]."""
    try:
        return Response(await strip.run_percentiles(session, engine, start_s, end_s),
                        media_type="application/json")
    except SessionError as err:
        raise http_error(err) from err


@router.get("/sessions/{session_id}/timeline")
async def run_timeline(session: BuiltSessionDep, engine: Engine = 0, start_s: Seconds = None,
                       end_s: Seconds = None, bins: Annotated[int, Query(ge=1, le=4000)] = 600,
                       max_rows: Annotated[int, Query(ge=0, le=1000)] = 200) -> dict[str, Any]:
    """Requests in each state over [start_s, end_s] in `bins` bins, and each request's spans
    when at most `max_rows` appear there (see api/reports/timeline.py)."""
    if start_s is not None and end_s is not None and end_s <= start_s:
        raise HTTPException(422, {"message": f"end_s ({end_s}) must be after start_s "
                                             f"({start_s})", "field": "end_s",
                                  "code": "invalid"})
    try:
        track = runs.track_of(session, engine)
        run = StoredRun(track.store.path, track.requests, track.number, track.head, track.done)
        with runs.reading(track):
            return await session.jobs.run("timeline", timeline, run, start_s, end_s, bins,
                                          max_rows)
    except SessionError as err:
        raise http_error(err) from err
