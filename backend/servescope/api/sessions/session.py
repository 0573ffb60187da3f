"""A session: 1-4 tracks (engines in lockstep of simulated time, or one replay), its playback
position (play at a speed, pause, step, seek) and the viewers that watch it."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from servescope.api.errors import JobError, SessionError
from servescope.api.sessions.build import Built, build
from servescope.api.sessions.track import Track
from servescope.api.settings import Settings
from servescope.api.wire import protocol as P
from servescope.api.wire.position import at_iter, at_time
from servescope.api.wire.serialize import dumps
from servescope.api.wire.text import dump

if TYPE_CHECKING:
    from servescope.api.jobs.pool import Jobs
    from servescope.api.uploads.store import Store


MAX_LAG_S = 0.25
PROGRESS_EVERY_S = 0.2


def new_token() -> str:
    """A driver token (who may hold one: api/sessions/access.py)."""
    return secrets.token_urlsafe(24)


class Viewer(Protocol):
    """What a session needs of whoever watches it (api/sessions/viewer.py is the one)."""

    role: P.Role

    def wake(self) -> None: ...


class Session:
    def __init__(self, sid: str, settings: Settings, store: Store, jobs: Jobs,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.id = sid
        self.token = new_token()  # the driver token
        self.jobs = jobs  # the server's heavy REST work (exports, diagnoses)
        self.settings = settings
        self.store = store
        self.clock = clock
        self.viewers: set[Viewer] = set()
        self.built: Built | None = None
        self.config_epoch = 0  # bumps on configure/reset: viewers get init + keyframes
        self.seek_epoch = 0  # bumps on seek: viewers get keyframes
        self.status_version = 0
        self.progress_version = 0
        self.position: list[int] = []  # last visible record of each track
        self.playing = False
        self.speed = 1.0
        self.sim_time = float("-inf")
        self._anchor = (0.0, 0.0)  # (wall clock, simulated time) when play began
        self._ticker: asyncio.Task[None] | None = None
        self.saved = False  # saved as a scenario: kept for the idle time, not the grace period
        self.last_active = clock()
        self._progress = asyncio.Event()  # set whenever a track stores a batch or ends
        self._progress_shown = 0.0  # wall time of the last status sent for progress alone
        self._builds = 0
        self.driver_left_s: float | None = clock()  # None while a driver is connected
        self.lesson: P.LessonNote | None = None  # the driver's lesson note, for followers
        self.lesson_version = 0
        self.payer = ""  # who created it (api/web/clients.py's payer_of), for its fair share
        # watching a live endpoint's engine (api/sessions/live.py): never reaped, and its
        # config is the endpoint's, not the page's
        self.live = False

    @property
    def tracks(self) -> list[Track]:
        return self.built.tracks if self.built else []

    # -- viewers --

    def join(self, viewer: Viewer) -> None:
        self.viewers.add(viewer)
        if viewer.role == "driver":
            self.driver_left_s = None

    def leave(self, viewer: Viewer) -> None:
        self.viewers.discard(viewer)
        self.last_active = self.clock()
        if not any(v.role == "driver" for v in self.viewers):
            self.driver_left_s = self.last_active

    def notify(self) -> None:
        for v in self.viewers:
            v.wake()

    def lesson_text(self) -> str | None:
        return dump(self.lesson) if self.lesson is not None else None

    def ended(self) -> bool:
        """Whether every track is at its run's end at the session's time."""
        return all(x.at_end(pos, self.sim_time) for x, pos in zip(self.tracks, self.position,
                                                                   strict=True))

    def set_lesson(self, msg: P.Lesson) -> None:
        """The driver's page shows another lesson note: every viewer gets it."""
        self.lesson = P.LessonNote(note=msg.note, anchor=msg.anchor, on=msg.on, tour=msg.tour)
        self.lesson_version += 1
        self.notify()

    def _changed(self, seek: bool = False, config: bool = False) -> None:
        self.status_version += 1
        self.seek_epoch += seek
        self.config_epoch += config
        self.last_active = self.clock()
        self.notify()

    # -- control --

    async def configure(self, msg: P.Configure, viewed: list[int] | None = None) -> bool:
        """Rebuild the tracks; False when config and workload equal the current ones.
        `viewed`: per track that runs a fleet, the replica whose records it streams (else 0)."""
        configs = msg.configs or [msg.config or {}]
        workload = msg.workload or (self.built.workload if self.built else
                                    P.WorkloadSpec(preset=self.settings.demo_preset))
        key = dumps([configs, workload.model_dump(exclude_none=True), msg.labels, viewed])
        if self.built is not None and key == self.built.key:
            return False
        self._builds += 1
        prefix = self.settings.data_dir / "runs" / f"{self.id}-{self._builds}"
        built = await build(configs, workload, self.settings, self.store, prefix, msg.labels,
                            viewed)
        built.key = key
        self.install(built)
        return True

    def install(self, built: Built) -> None:
        """`built`'s tracks replace the session's (closed); playback starts over."""
        self._stop()
        self._close_tracks()
        for track in built.tracks:
            track.on_progress = self._on_progress
        self.built = built
        self.position = [-1] * len(built.tracks)
        self.sim_time = float("-inf")
        self.lesson = None  # a new run: the driver's page says what it shows of it
        self._changed(config=True)

    def _on_progress(self) -> None:
        """A track stored a batch or ended: wake waiters, and tell viewers how far the
        simulation has got (a few times a second, every time at the end)."""
        self._progress.set()
        now = time.monotonic()
        if all(x.done for x in self.tracks) or now - self._progress_shown >= PROGRESS_EVERY_S:
            self._progress_shown = now
            self.progress_version += 1
            self.notify()

    def play(self, speed: float) -> None:
        self.speed = speed
        self.playing = True
        start = self.sim_time if self.sim_time != float("-inf") else 0.0
        self._anchor = (self.clock(), start)
        if self._ticker is None or self._ticker.done():
            self._ticker = asyncio.create_task(self._tick_loop())
        self._changed()

    def pause(self) -> None:
        self._stop()
        self._changed()

    def _stop(self) -> None:
        self.playing = False
        if self._ticker is not None and self._ticker is not asyncio.current_task():
            self._ticker.cancel()
        self._ticker = None

    async def step(self, n: int) -> None:
        self._stop()
        lead = self.tracks[0]
        target = self.position[0] + n
        await self.compute(lambda: lead.has(at_iter(target)))
        self.position[0] = target if lead.end_of(target) is not None else lead.head
        await self._follow_lead()
        self._changed()

    async def seek(self, msg: P.Seek) -> None:
        self._stop()
        lead = self.tracks[0]
        target = msg.position()
        await self.compute(lambda: lead.has(target))
        self.position[0] = lead.index_at(target)
        await self._follow_lead(lead.time_at(self.position[0], target))
        self._changed(seek=True)

    def reset(self) -> None:
        self._stop()
        self.position = [-1] * len(self.tracks)
        self.sim_time = float("-inf")
        self._changed(config=True)

    async def _follow_lead(self, t: float | None = None) -> None:
        """Move the other tracks (compare mode) to the lead's simulated time (or t)."""
        lead = self.tracks[0]
        pos = self.position[0]
        if t is None:
            t = lead.start_at(pos) if pos >= 0 else float("-inf")
        self.sim_time = t
        others = self.tracks[1:]
        await self.compute(lambda: all(x.has(at_time(t)) for x in others), others)
        for k, x in enumerate(others, start=1):
            self.position[k] = x.index_at_time(t)

    async def compute(self, until: Callable[[], Any], tracks: list[Any] | None = None) -> None:
        """Wait until `until()` holds or the tracks' background simulations have ended; a
        SessionError (409) when a track is closed meanwhile (the session reconfigured or
        ended), a JobError (503) past job_timeout_s."""
        tracks = tracks or self.tracks[:1]
        limit_s = self.settings.job_timeout_s
        try:
            async with asyncio.timeout(limit_s):
                while not until() and not all(x.done for x in tracks):
                    if any(x.closed for x in tracks):
                        raise SessionError("the session was reconfigured or closed while this "
                                           "waited for its run; ask again", "session",
                                           "conflict")
                    self._progress.clear()
                    await self._progress.wait()
        except TimeoutError:
            raise JobError(f"the run did not get there within this server's job_timeout_s "
                           f"({limit_s:g} s); ask again later") from None

    async def _tick_loop(self) -> None:
        interval = 1.0 / self.settings.max_fps
        loop = asyncio.get_running_loop()
        due = loop.time()
        try:
            while self.playing:  # ticks on a fixed 1/max_fps grid, so viewers see a steady rate
                await self._tick()
                due += interval
                if due < loop.time() - interval:
                    due = loop.time()
                await asyncio.sleep(max(0.001, due - loop.time()))
        except asyncio.CancelledError:
            pass

    async def _tick(self) -> None:
        wall, start = self._anchor
        target = start + (self.clock() - wall) * self.speed
        frontier = [x.frontier_s(pos) for x, pos in zip(self.tracks, self.position, strict=True)]
        behind = [t for x, t in zip(self.tracks, frontier, strict=True)
                  if not x.done and t <= target]
        if behind:  # the simulation cannot keep up: show what exists, let the lag grow no
            reached = min(behind)  # further than MAX_LAG_S of wall time
            if reached == float("-inf"):  # nothing stored yet: the clock waits at the start
                self._anchor = (self.clock(), start)
                return
            if (target - reached) / self.speed > MAX_LAG_S:
                self._anchor = (self.clock(), reached + MAX_LAG_S * self.speed)
            target = reached
        before = list(self.position)
        self.sim_time = target
        for k, x in enumerate(self.tracks):
            self.position[k] = x.index_at_time(target)
            if x.leaping is not None:
                x.leaping.follow(self.position[k])
        if self.ended():
            self.playing = False
            self._changed()
        elif self.position != before:
            self.last_active = self.clock()
            self.notify()

    def _close_tracks(self) -> None:
        """Close the tracks and wake whoever waits on them (`compute` then refuses)."""
        for x in self.tracks:
            x.close()
        self._progress.set()

    def close(self) -> None:
        """Stop playing and the background simulations; delete the tracks' files."""
        self._stop()
        self._close_tracks()
