"""A live session: one track fed by a live engine's records as they happen (`servescope serve
--openai`, api/openai/live.py), stored as any track's so a viewer seeks back over what has run,
played at the engine's time scale so the play head follows the live edge. Its engine belongs to
the endpoint: a configure or reset from a page is refused (api/web/control.py)."""

from __future__ import annotations

from pathlib import Path

from servescope.api.records.live_feed import LiveFeed
from servescope.api.sessions.build import Built
from servescope.api.sessions.session import Session
from servescope.api.sessions.track import Track
from servescope.api.settings import Settings
from servescope.api.wire import protocol as P
from servescope.api.wire.position import Position
from servescope.core.config import EngineConfig
from servescope.core.request import RequestSpec

LIVE_SOURCE: P.RunSource = "live"  # init.source and the page's badge, beside simulated and replayed
REFUSED = ("this session watches the live endpoint (servescope serve --openai), whose engine "
           "runs the requests clients send: its config cannot be changed or reset from the "
           "page; restart the server with another --config")


class LiveTrack(Track):
    """A track whose run has no end yet: what is stored is everything there is, so a seek past
    the live edge shows the newest record instead of waiting for one. `arrived`: the requests
    as they arrived, each with the index of the record it arrived in (a saved recording's
    request list: api/reports/runs.py)."""

    def __init__(self, feed: LiveFeed, config: EngineConfig, settings: Settings,
                 path: Path) -> None:
        super().__init__(0, feed.next, [], config.num_gpu_blocks or 0,
                         settings.keyframe_interval, settings.max_records_per_session, path,
                         enable_prefix_caching=config.enable_prefix_caching)
        self.config = config
        self.arrived: list[tuple[int, RequestSpec]] = []
        feed.before_wait = self.writer.flush  # on the track's thread, as the writer is
        feed.stopped = lambda: self.closed

    def has(self, target: Position) -> bool:
        return True


def engine_info(config: EngineConfig, label: str) -> dict[str, object]:
    """The init's engine entry for a live engine (api/wire/engine_info.py's EngineInfo)."""
    blocks = config.num_gpu_blocks or 0
    return {"label": label, "config": config.to_dict(), "num_gpu_blocks": blocks,
            "block_size": config.block_size, "num_usable_blocks": max(0, blocks - 1),
            "memory_breakdown": None, "not_modelled": [], "acceptance_source": "none",
            "fleet": None}


def open_live(session: Session, config: EngineConfig, feed: LiveFeed, time_scale: float,
              label: str) -> LiveTrack:
    """Make `session` (new, from the registry) watch the engine `feed` hears, playing at the
    engine's own pace; on the running event loop."""
    path = session.settings.data_dir / "runs" / f"{session.id}-live.sqlite3"
    track = LiveTrack(feed, config, session.settings, path)
    built = Built(P.WorkloadSpec(requests=[]), LIVE_SOURCE, None, [engine_info(config, label)],
                  [track])
    session.live = True
    session.install(built)
    track.start()
    session.play(time_scale)
    return track
