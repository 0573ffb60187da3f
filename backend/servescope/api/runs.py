"""Run results of a session for REST: descriptions, summaries (running the engines to the end)
and exports (records as JSONL, `vllm bench serve` JSON, per-request CSV, Perfetto trace)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from servescope import exports
from servescope.api.session import Session, SessionError
from servescope.api.track import Track
from servescope.core.config import EngineConfig
from servescope.traces.steps_servescope import record_from_dict

FORMATS = ("jsonl", "bench", "csv", "perfetto")


def describe(session: Session, with_token: bool = False) -> dict[str, Any]:
    """What a session runs; `with_token` (for its creator only) adds the driver token and the
    links that carry it."""
    b = session.built
    out = {
        "session_id": session.id, "num_viewers": len(session.viewers),
        "playing": session.playing, "speed": session.speed, "iters": list(session.position),
        "source": b.source if b else None, "preset": b.preset if b else None,
        "engines": b.engines if b else [], "num_requests": len(json.loads(b.requests_text))
        if b else 0, "ws_path": f"/ws/sessions/{session.id}",
        "follow_url": f"/?session={session.id}&follow=1",
    }
    if with_token:
        out.update(token=session.token, ws_path=f"/ws/sessions/{session.id}?token={session.token}",
                   drive_url=f"/?session={session.id}&token={session.token}")
    return out


async def finish(session: Session, engine: int | None = None) -> list[Track]:
    tracks = session.tracks if engine is None else [_track(session, engine)]
    await session._compute(lambda: all(t.done for t in tracks), tracks)
    return tracks


async def summaries(session: Session) -> list[dict[str, Any]]:
    tracks = await finish(session)
    return [{"engine": t.number, "label": session.built.engines[t.number]["label"]
             if session.built else "", "num_records": len(t.packed), "summary": t.summary or {}}
            for t in tracks]


async def export(session: Session, engine: int, fmt: str) -> tuple[str, Iterator[str]]:
    """(media type, text chunks) of one engine's run in the given format."""
    if fmt not in FORMATS:
        raise SessionError(f"format must be one of {', '.join(FORMATS)}", "format")
    (track,) = await finish(session, engine)
    if fmt == "jsonl":
        return "application/x-ndjson", (json.dumps(r, separators=(",", ":")) + "\n"
                                        for r in track.records())
    if fmt == "perfetto":
        records = [record_from_dict(r, k + 1) for k, r in enumerate(track.records())]
        # a step-clock workload has no arrival_s: its requests' tracks start at zero
        requests = [{**r, "arrival_s": r["arrival_s"] or 0.0} for r in track.requests]
        return "application/json", iter([json.dumps(exports.perfetto_trace(records, requests))])
    if track.engine is None:
        raise SessionError("a replayed run has no per-request metrics to export", "format")
    metrics = track.engine.request_metrics()
    if fmt == "csv":
        return "text/csv", iter([exports.requests_csv(metrics)])
    config = EngineConfig.from_dict(session.built.engines[engine]["config"]) \
        if session.built else EngineConfig()
    data = exports.bench_json(track.summary or {}, metrics, config)
    return "application/json", iter([json.dumps(data)])


def _track(session: Session, engine: int) -> Track:
    if not 0 <= engine < len(session.tracks):
        raise SessionError(f"engine must be 0..{len(session.tracks) - 1}", "engine", "not_found")
    track: Track = session.tracks[engine]
    return track
