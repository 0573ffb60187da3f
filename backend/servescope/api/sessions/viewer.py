"""One viewer of a session: what it has been sent, and a sender that brings it to the session's
position at most `max_fps` times a second. It never queues: a viewer whose socket is slow
skips to the newest state (through a keyframe) when it drains again."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from servescope.api.sessions.session import Session
from servescope.api.sessions.texts import init_text, progress_text, status_text
from servescope.api.wire import protocol as P
from servescope.api.wire.fleet import FleetFrame
from servescope.api.wire.text import dump

Send = Callable[[str], Awaitable[None]]


class Viewer:
    def __init__(self, session: Session, send: Send, role: P.Role) -> None:
        self.session = session
        self.send = send
        self.role = role
        self._event = asyncio.Event()
        self.config_epoch = -1
        self.seek_epoch = -1
        self.status_version = -1
        self.progress_version = -1
        self.lesson_version = -1
        self.sent: list[int] = []
        self.fleet_sent_s: list[float | None] = []  # per track: the last fleet frame's time
        self.done_sent: set[int] = set()
        self.outbox: deque[str] = deque(maxlen=16)  # replies to this viewer (errors)
        self.num_frames = 0
        self.num_bytes = 0

    def wake(self) -> None:
        self._event.set()

    def reply(self, **error: object) -> None:
        self.outbox.append(dump(P.Error.model_validate(error)))
        self.wake()

    def resync(self) -> None:
        """Send init and keyframes again at the next frame (a repeated configure)."""
        self.config_epoch = -1
        self.status_version = -1
        self.wake()

    def pending(self) -> list[str]:
        """The messages that bring this viewer to the session's current state."""
        s = self.session
        out = list(self.outbox)
        self.outbox.clear()
        if s.built is None:
            return out
        if self.config_epoch != s.config_epoch:
            out.append(init_text(s, self.role))
            self.config_epoch, self.seek_epoch = s.config_epoch, -1
            self.progress_version = self.lesson_version = -1
            self.sent = [-2] * len(s.tracks)
            self.fleet_sent_s = [None] * len(s.tracks)
            self.done_sent = set()
        resync = self.seek_epoch != s.seek_epoch
        self.seek_epoch = s.seek_epoch
        limit = s.settings.catch_up_records
        for k, track in enumerate(s.tracks):
            pos = s.position[k]
            end = track.end_of(self.sent[k])  # (a leap's records may lie past a gap)
            if resync or pos < self.sent[k] or pos - self.sent[k] > limit or end is None \
                    or end < pos:
                at, text = track.keyframe_before(pos)
                out.append(text)
                self.sent[k] = at
            frame = track.frame(self.sent[k], pos)
            if frame is not None:
                out.append(frame)
                self.sent[k] = pos
            out += self._fleet(k, track, resync)
            if track.done and pos == track.head and k not in self.done_sent:
                out.append(track.done_message())
                self.done_sent.add(k)
        if self.status_version != s.status_version:
            out.append(status_text(s))
            self.status_version = s.status_version
        if self.progress_version != s.progress_version:
            out.append(progress_text(s))
            self.progress_version = s.progress_version
        if self.lesson_version != s.lesson_version:
            lesson = s.lesson_text()
            out += [lesson] if lesson is not None else []
            self.lesson_version = s.lesson_version
        return out

    def _fleet(self, k: int, track: Any, resync: bool) -> list[str]:
        """Track k's fleet frame at the session's time when it moved (api/wire/fleet.py): the
        arrivals since the last one, or after a seek (or a move back) the newest few."""
        t = self.session.sim_time
        last = self.fleet_sent_s[k]
        if track.fleet is None or (t == last and not resync):
            return []
        after = None if resync or last is None or t < last else last
        self.fleet_sent_s[k] = t
        frame = track.fleet.frame(t, after)
        return [dump(FleetFrame(engine=k, **{**frame, "time_s": max(t, 0.0)}))]

    async def run(self) -> None:
        """Send what is new each time the session changes, at most `max_fps` frames a second
        (a token bucket of two: a late tick does not cost a frame, the rate still holds)."""
        fps = self.session.settings.max_fps
        tokens, last = 1.0, time.perf_counter()
        self.wake()
        while True:
            await self._event.wait()
            now = time.perf_counter()
            tokens = min(2.0, tokens + (now - last) * fps)
            last = now
            if tokens < 1.0:
                await asyncio.sleep((1.0 - tokens) / fps)
                tokens, last = 1.0, time.perf_counter()
            tokens -= 1.0
            self._event.clear()
            for text in self.pending():
                await self.send(text)
                self.num_bytes += len(text)
            self.num_frames += 1
