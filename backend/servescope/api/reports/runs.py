"""Run results of a session for REST: descriptions, summaries (waiting for the background
simulation to end; a live run's so far) and exports (records as JSONL, a replayable recording,
`vllm bench serve` JSON, per-request CSV, Perfetto trace, vLLM's metrics over the run as
OpenMetrics), built in job worker processes from the tracks' stores and finished requests, and
cut at max_export_bytes."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from servescope.api.errors import JobError, SessionError
from servescope.api.reports import work as job_work
from servescope.api.reports.done_requests import DoneRequests
from servescope.api.reports.metrics import public_label
from servescope.api.sessions.live import LiveTrack
from servescope.api.sessions.session import Session
from servescope.api.sessions.track import Track
from servescope.api.wire.serialize import dumps
from servescope.core.config import EngineConfig
from servescope.observability import openmetrics as om
from servescope.observability.families import engine_view, max_model_len, model_name
from servescope.traces.recording import FORMAT, VERSION, request_rows

FORMATS = ("jsonl", "recording", "bench", "csv", "perfetto", "openmetrics")
MEDIA = {"jsonl": "application/x-ndjson", "csv": "text/csv", "bench": "application/json",
         "perfetto": "application/json", "recording": "application/x-ndjson"}


def describe(session: Session, with_token: bool = False) -> dict[str, Any]:
    """What a session runs; `with_token` (for its creator only) adds the driver token and the
    links that carry it."""
    b = session.built
    tracks = session.tracks
    out = {
        "session_id": session.id, "num_viewers": len(session.viewers),
        "playing": session.playing, "speed": session.speed, "iters": list(session.position),
        "source": b.source if b else None, "preset": b.preset if b else None,
        "engines": b.engines if b else [], "num_requests": len(tracks[0].requests)
        if tracks else 0, "ws_path": f"/ws/sessions/{session.id}",
        "follow_url": f"/?session={session.id}&follow=1",
        "metrics_label": public_label(session.id),
        "simulated": [{"engine": t.number, "num_records": t.head + 1, "done": t.done,
                       "error": t.error, "reach": t.reach()[0], "scout": scout_state(t)}
                      for t in tracks],
    }
    if with_token:
        out.update(token=session.token, ws_path=f"/ws/sessions/{session.id}?token={session.token}",
                   drive_url=f"/?session={session.id}&token={session.token}")
    return out


def scout_state(track: Track) -> dict[str, Any] | None:
    """A track's scout (api/leaps/scout.py): how far it has run the engine, its leap, why it failed;
    None where the track has none."""
    leaping = track.leaping
    if leaping is None:
        return None
    r = leaping.range
    return {"reach": leaping.reach, "reach_s": max(leaping.reach_s, 0.0),
            "done": leaping.reach_done, "error": leaping.error,
            "leap": None if r is None else [r.first, r.last]}


async def finish(session: Session, engine: int | None = None) -> list[Track]:
    """The tracks once their runs end; a live run's at once (it has no end: what has run)."""
    tracks = session.tracks if engine is None else [track_of(session, engine)]
    if not session.live:
        await session.compute(lambda: all(t.done for t in tracks), tracks)
    return tracks


async def summaries(session: Session) -> list[dict[str, Any]]:
    tracks = await finish(session)
    return [{"engine": t.number, "label": session.built.engines[t.number]["label"]
             if session.built else "", "num_records": t.head + 1, "summary": t.summary or {},
             **({"error": t.error} if t.error else {})} for t in tracks]


async def export(session: Session, engine: int, fmt: str, epoch_s: float | None = None,
                 interval_s: float = 1.0) -> tuple[str, Iterator[str] | AsyncIterator[bytes]]:
    """(media type, text chunks) of one engine's run in the given format; `epoch_s` and
    `interval_s` place and sample the OpenMetrics one."""
    if fmt not in FORMATS:
        raise SessionError(f"format must be one of {', '.join(FORMATS)}", "format")
    (track,) = await finish(session, engine)
    limit = session.settings.max_export_bytes
    if fmt == "openmetrics":
        return om.MEDIA_TYPE, _openmetrics(session, track, epoch_s, interval_s)
    if fmt == "perfetto" and track.head + 1 > session.settings.max_perfetto_records:
        raise SessionError(f"this run has {track.head + 1} records; a Perfetto trace is built "
                           f"whole, up to this server's max_perfetto_records "
                           f"({session.settings.max_perfetto_records}): export jsonl",
                           "format", "too_large")
    if fmt in ("jsonl", "perfetto", "recording"):  # in a worker, read from the track's file
        work = {"jsonl": job_work.jsonl, "perfetto": job_work.perfetto,
                "recording": job_work.recording}[fmt]
        head = (recording_header(session, track),) if fmt == "recording" else ()
        with reading(track) as path:  # until the worker has it open: its first chunk
            return MEDIA[fmt], await _stream(session, fmt, work, path, *head, track.requests,
                                             track.head, limit)
    if track.engine is None:
        raise SessionError("a replayed run has no per-request metrics to export", "format")
    # in a worker process, from the finished requests' columns
    config = EngineConfig.from_dict(session.built.engines[track.number]["config"]) \
        if session.built else EngineConfig()
    return MEDIA[fmt], await _stream(session, fmt, job_work.requests_export,
                                     await done_requests(track), fmt, track.summary or {},
                                     config, limit)


def recording_header(session: Session, track: Track) -> dict[str, Any]:
    """A servescope-steps header (traces/recording.py) for the track's records so far: its
    config and requests (a live run's: those that arrived by its last stored record)."""
    config = session.built.engines[track.number]["config"] if session.built else {}
    if isinstance(track, LiveTrack):
        rows = request_rows(spec for at, spec in track.arrived if at <= track.head)
    else:
        rows = list(track.requests)
    return {"format": FORMAT, "version": VERSION, "source": "simulated", "config": config,
            "requests": rows}


async def _stream(session: Session, fmt: str, work: Any, *args: Any) -> AsyncIterator[bytes]:
    try:
        return await session.jobs.stream(f"{fmt} export", work, *args, tail=_tail)
    except JobError as err:
        if err.code == "too_large":  # over max_export_bytes, before its first byte
            raise SessionError(str(err), "format", "too_large") from err
        raise


async def done_requests(track: Track) -> DoneRequests | None:
    """The track's finished requests so far as columns for a job (None for a replayed run),
    gathered on a thread: the loop goes on meanwhile."""
    if track.engine is None:
        return None
    return await asyncio.to_thread(DoneRequests.of, track.engine)


def _tail(message: str) -> bytes:
    """The last line of a stream its worker could not finish."""
    return (json.dumps({"error": f"export stopped: {message}"}) + "\n").encode()


def request_page(session: Session, engine: int, offset: int, limit: int) -> str:
    """Requests offset..offset + limit - 1 of an engine's list as a RequestPage's JSON."""
    requests = track_of(session, engine).requests
    if offset > len(requests):
        raise SessionError(f"offset {offset} is past the last request: this session runs "
                           f"{len(requests)}", "offset", "out_of_range")
    return dumps({"total": len(requests), "offset": offset,
                  "requests": requests[offset:offset + limit]})


@contextlib.contextmanager
def reading(track: Track) -> Iterator[Path]:
    """The track's file for a job in a worker process (Track.reading), or a 409 when a
    reconfigure or reset replaced the track while the request waited."""
    check_open(track)
    with track.reading() as path:
        yield path


def check_open(track: Track) -> None:
    """A 409 for a track a reconfigure or reset has replaced."""
    if track.closed:
        raise SessionError("the session was reconfigured or reset while this was asked; ask "
                           "again", "engine", "conflict")


def track_of(session: Session, engine: int) -> Track:
    if not 0 <= engine < len(session.tracks):
        raise SessionError(f"engine must be 0..{len(session.tracks) - 1}", "engine", "not_found")
    track: Track = session.tracks[engine]
    return track


def _openmetrics(session: Session, track: Track, epoch_s: float | None,
                 interval_s: float) -> Iterator[str]:
    config = session.built.engines[track.number]["config"] if session.built else {}
    view = engine_view(track.meter, model_name(config), track.number, public_label(session.id),
                       config, max_model_len(config, track.requests))
    try:
        return om.openmetrics([view], om.default_epoch([view]) if epoch_s is None else epoch_s,
                              interval_s)
    except om.ExportError as err:
        raise SessionError(str(err), err.field) from err
