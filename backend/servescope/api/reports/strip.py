"""The overview strip and the percentile panel of a session's run, as the page asks for them:
each computed in a job (api/reports/overview.py in a worker process, which also writes the JSON)
once per question and run version, and shared by every request that asks the same meanwhile
(api/jobs/shared.py), so a room of page loads costs one job and one encoding, not a 503 each
past the job pool's line."""

from __future__ import annotations

from servescope.api.reports import runs
from servescope.api.reports.overview import overview_json, percentiles_json
from servescope.api.sessions.session import Session


async def run_overview(session: Session, engine: int, bins: int) -> bytes:
    """Every stored record so far in `bins` bins of simulated time, as JSON."""
    track = runs.track_of(session, engine)
    runs.check_open(track)  # a replaced run's answer is not given again
    head, done = track.head, track.done  # what the finished requests cover, or more

    async def compute() -> bytes:
        with runs.reading(track) as path:
            finished = await runs.done_requests(track)
            answer: bytes = await session.jobs.call(
                "overview", overview_json, path, head, bins, track.number, done, finished,
                shared=True)
            return answer

    key = ("overview", str(track.store.path), bins)
    shared: bytes = await session.jobs.shared.get(key, (head, done), compute)
    return shared


async def run_percentiles(session: Session, engine: int, start_s: float | None,
                          end_s: float | None) -> bytes:
    """TTFT, TPOT, ITL and E2E percentiles of the requests finished in [start_s, end_s], as
    JSON."""
    track = runs.track_of(session, engine)
    runs.check_open(track)
    head, done = track.head, track.done

    async def compute() -> bytes:
        finished = await runs.done_requests(track)
        answer: bytes = await session.jobs.call(
            "percentiles", percentiles_json, finished, track.number, done, start_s, end_s,
            shared=True)
        return answer

    key = ("percentiles", str(track.store.path), start_s, end_s)
    shared: bytes = await session.jobs.shared.get(key, (head, done), compute)
    return shared
