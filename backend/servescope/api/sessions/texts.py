"""What a session says to its viewers, as protocol v1's text frames: init (what runs), status
(where playback stands) and progress (how far each track's simulation has got)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from servescope.api.wire import protocol as P
from servescope.api.wire.engine_info import EngineInfo, TraceInfo
from servescope.api.wire.text import dump

if TYPE_CHECKING:
    from servescope.api.sessions.session import Session


def init_text(session: Session, role: P.Role) -> str:
    """The `init` message: what runs, and how many requests (the list is paged over REST)."""
    b, lead = session.built, session.tracks[0]
    assert b is not None
    first = b.engines[0]
    return dump(P.Init(
        session_id=session.id, role=role, token=session.token if role == "driver" else None,
        source=b.source, preset=b.preset, config=first["config"],
        num_gpu_blocks=first["num_gpu_blocks"], block_size=first["block_size"],
        engines=[EngineInfo.model_validate(e) for e in b.engines], num_requests=len(lead.requests),
        num_records=lead.head + 1 if lead.done else None,
        keyframe_interval=session.settings.keyframe_interval,
        max_fps=session.settings.max_fps, playing=session.playing, speed=session.speed,
        trace=None if b.trace is None else TraceInfo.model_validate(b.trace)))


def status_text(session: Session) -> str:
    """`done` once every track shows its last record at its run's end (a fleet's: every
    replica's last step, Track.at_end)."""
    done = session.ended() and all(x.done and p == x.head for x, p in
                                   zip(session.tracks, session.position, strict=True))
    t = session.sim_time if session.sim_time != float("-inf") else 0.0
    return dump(P.Status(playing=session.playing, speed=session.speed, iters=session.position,
                         time_s=t, done=done))


def progress_text(session: Session) -> str:
    """How far each track's background simulation has got (the scrubber's reach)."""
    tracks = session.tracks
    reach = [x.reach() for x in tracks]
    return dump(P.Progress(computed=[x.head for x in tracks],
                           time_s=[max(x.frontier_s(x.head), 0.0) for x in tracks],
                           done=[x.done for x in tracks],
                           errors=[x.error for x in tracks],
                           reach=[it for it, _ in reach],
                           reach_s=[max(t, 0.0) for _, t in reach],
                           no_leap=[x.no_leap for x in tracks]))
