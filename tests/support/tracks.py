"""A track (api/track.py) built by hand, simulated to its end: for the tests and benches that
store a run without a server."""

from __future__ import annotations

import asyncio

from servescope.api.track import Track


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
