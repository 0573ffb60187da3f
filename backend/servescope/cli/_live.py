"""`serve --openai`'s live sessions: once the explorer's registry exists, one session a live engine
(api/sessions/live.py) whose track its records feed as they happen, and the links that open
them printed ("explorer at URL"; with --replicas, one a replica: "replica K explorer at URL")."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from servescope.api.openai.live import LiveEngine
from servescope.api.records.live_feed import LiveFeed
from servescope.api.sessions.live import LiveTrack, open_live
from servescope.api.settings import Settings
from servescope.core.records import StepRecord


def watch_live(explorer: Any, engines: Sequence[LiveEngine], settings: Settings) -> None:
    """Open the live sessions inside the explorer's lifespan, after its own startup."""
    inner = explorer.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[Any]:
        async with inner(app) as state:
            lines = []
            for k, live in enumerate(engines):
                session = app.state.registry.create()
                label = f"replica {k}" if len(engines) > 1 else "live"
                feed = LiveFeed()
                track = open_live(session, live.config, feed, live.time_scale, label)
                live.listeners.append(listener(live, feed, track))
                url = (f"http://{settings.host}:{settings.port}/?session={session.id}"
                       f"&token={session.token}")
                lines.append(f"replica {k} explorer at {url}" if k else f"explorer at {url}")
            print("\n".join(lines), flush=True)
            yield state

    explorer.router.lifespan_context = lifespan


def listener(live: LiveEngine, feed: LiveFeed,
             track: LiveTrack) -> Callable[[StepRecord | None], None]:
    """The engine's listener: each record to the track's thread, its arrivals' specs kept for a
    saved recording's request list (on the event loop, where they are read)."""
    streams = live.streams  # an arrival's stream is there until its tokens are delivered
    num_heard = 0  # the track stores the k-th record heard as its record k

    def hear(record: StepRecord | None) -> None:
        nonlocal num_heard
        if record is not None:
            track.arrived.extend((num_heard, streams[rid].spec) for rid in record.arrivals)
            num_heard += 1
        feed.put(record)

    return hear
