"""The overview strip and the percentile panel of a session's run, as the page asks for them:
each computed in a job (api/reports/overview.py in a worker process) once per question and run
version, and shared by every request that asks the same meanwhile (api/jobs/shared.py), so a
room of page loads costs one job, not a 503 each past the job pool's line."""

from __future__ import annotations

from typing import Any

from servescope.api.reports import runs
from servescope.api.reports.overview import overview, percentiles
from servescope.api.sessions.session import Session


async def run_overview(session: Session, engine: int, bins: int) -> dict[str, Any]:
    """Every stored record so far in `bins` bins of simulated time."""
    track = runs.track_of(session, engine)
    runs.check_open(track)  # a replaced run's answer is not given again
    head, done = track.head, track.done  # what the finished requests cover, or more

    async def compute() -> dict[str, Any]:
        with runs.reading(track) as path:
            finished = await runs.done_requests(track)
            answer: dict[str, Any] = await session.jobs.call(
                "overview", overview, path, head, bins, track.number, done, finished, shared=True)
            return answer

    key = ("overview", str(track.store.path), bins)
    shared: dict[str, Any] = await session.jobs.shared.get(key, (head, done), compute)
    return shared


async def run_percentiles(session: Session, engine: int, start_s: float | None,
                          end_s: float | None) -> dict[str, Any]:
    """TTFT, TPOT, ITL and E2E percentiles of the requests finished in [start_s, end_s]."""
    track = runs.track_of(session, engine)
    runs.check_open(track)
    head, done = track.head, track.done

    async def compute() -> dict[str, Any]:
        finished = await runs.done_requests(track)
        answer: dict[str, Any] = await session.jobs.call(
            "percentiles", percentiles, finished, track.number, done, start_s, end_s, shared=True)
        return answer

    key = ("percentiles", str(track.store.path), start_s, end_s)
    shared: dict[str, Any] = await session.jobs.shared.get(key, (head, done), compute)
    return shared
