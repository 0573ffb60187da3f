"""A track (api/sessions/track.py) built by hand, simulated to its end: for the tests and benches
that store a run without a server."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

from servescope.api.reports.work import records
from servescope.api.sessions.track import Track


def run_to_end(track: Track) -> None:
    """Start the track's thread; return when it is done (each batch it publishes wakes the
    wait: no clock involved)."""
    async def ended() -> None:
        progressed = asyncio.Event()
        track.on_progress = progressed.set
        track.start()
        while not track.done:
            progressed.clear()
            await progressed.wait()
    asyncio.run(ended())


def stored_records(track: Track, upto: int | None = None,
                   first: int = 0) -> Iterator[dict[str, Any]]:
    """Records first..upto (default: all stored) of the track's file in to_dict() form, as the
    jobs read them (api/reports/work.py)."""
    return records(track.store.path, track.requests, track.head if upto is None else upto, first)
