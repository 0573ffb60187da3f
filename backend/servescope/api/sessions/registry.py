"""The sessions this server process holds (one worker: they live in memory), with limits and
reaping: a session whose driver left is freed after the grace period when nobody watches it
(after the idle time if it was saved as a scenario; never while followers watch); when the
server is full, the session abandoned longest goes first, so closed tabs lock nobody out."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from servescope.api.errors import SessionError
from servescope.api.jobs.arenas import bound_arenas
from servescope.api.jobs.pool import Jobs
from servescope.api.records.run_store import remove_runs
from servescope.api.sessions.session import Session
from servescope.api.settings import Settings
from servescope.api.uploads.store import Store, new_id
from servescope.api.wire import protocol as P

MIB = 1024 * 1024


class Registry:
    def __init__(self, settings: Settings, store: Store,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self.store = store
        self.clock = clock
        self.sessions: dict[str, Session] = {}
        self.jobs = Jobs(settings.max_jobs, settings.job_timeout_s,
                         memory_cap_mb=settings.memory_cap_mb)
        self.jobs.others = self.scouts_memory
        # the sessions' simulate-ahead threads share a few malloc arenas, so what an ended
        # session freed serves the next instead of growing the process (api/jobs/arenas.py)
        bound_arenas()
        remove_runs(settings.data_dir / "runs")  # a previous process's: nobody owns them

    def create(self, payer: str = "") -> Session:
        """A new session charged to `payer` (api/web/clients.py's payer_of): refused when the
        server or the payer holds its most, or the data directory is over its quota."""
        if len(self.sessions) >= self.settings.max_sessions:
            self.reap()
        if len(self.sessions) >= self.settings.max_sessions:
            self._drop_abandoned()
        if len(self.sessions) >= self.settings.max_sessions:
            raise SessionError(f"this server holds at most {self.settings.max_sessions} "
                               "sessions; close one or try later", None, "limit")
        held = sum(s.payer == payer and (bool(s.viewers) or s.driver_left_s is None)
                   for s in self.sessions.values())  # abandoned ones go when the server fills
        if payer and held >= self.settings.client_max_sessions:
            raise SessionError(f"you hold {held} sessions, the most one client may "
                               "(client_max_sessions); close one first", None, "limit")
        self.check_data("new session")
        self.jobs.check_memory("new session")
        session = Session(new_id(), self.settings, self.store, self.jobs, self.clock)
        session.payer = payer
        self.sessions[session.id] = session
        return session

    def data_used(self) -> int:
        """Bytes of the data directory's uploads and run stores."""
        runs = self.settings.data_dir / "runs"
        stores = sum(f.stat().st_size for f in runs.iterdir()) if runs.is_dir() else 0
        return self.store.stored_bytes() + stores

    def check_data(self, what: str) -> None:
        quota = self.settings.data_quota_mb * MIB
        if (used := self.data_used()) >= quota:
            raise SessionError(f"the data directory holds {used // MIB} MiB, its quota "
                               f"(data_quota_mb) is {quota // MIB}; the {what} is refused "
                               "until uploads expire or sessions end", None, "storage_full")

    def discard_unbuilt(self, session: Session) -> None:
        """Free a session nobody configured once its creator's socket has gone."""
        if session.built is None and not session.viewers:
            self.sessions.pop(session.id, None)
            session.close()

    async def create_configured(self, msg: P.Configure, payer: str = "") -> Session:
        session = self.create(payer)
        try:
            await session.configure(msg)
        except Exception:
            self.sessions.pop(session.id, None)
            raise
        return session

    def scouts_memory(self) -> int:
        """Resident bytes of the sessions' scout processes (api/leaps/scout.py)."""
        return sum(t.leaping.rss() for s in self.sessions.values() for t in s.tracks
                   if t.leaping is not None)

    def get(self, sid: str) -> Session | None:
        return self.sessions.get(sid)

    def reap(self) -> list[str]:
        """Drop the sessions past their grace period or idle time."""
        now = self.clock()
        gone = [sid for sid, s in self.sessions.items() if self._expired(s, now)]
        for sid in gone:
            self.sessions.pop(sid).close()
        running = {s.built.workload.trace for s in self.sessions.values()
                   if s.built is not None and s.built.workload.trace}
        self.store.expire(time.time() - self.settings.upload_retention_s, running)
        return gone

    def _expired(self, s: Session, now: float) -> bool:
        if s.driver_left_s is None or s.live:  # a live one lasts as long as its endpoint
            return False
        idle = now - s.last_active > self.settings.session_idle_s
        if s.viewers or s.saved:
            return idle and not s.viewers
        return now - s.driver_left_s > self.settings.session_grace_s or idle

    def _drop_abandoned(self) -> None:
        """Free the session with neither driver nor viewers that was left longest ago."""
        left = [s for s in self.sessions.values()
                if not s.viewers and s.driver_left_s is not None and not s.live]
        if left:
            oldest = min(left, key=lambda s: s.driver_left_s or 0.0)
            self.sessions.pop(oldest.id).close()

    async def reap_loop(self) -> None:
        every_s = min(30.0, max(0.05, self.settings.session_grace_s / 4))
        while True:
            await asyncio.sleep(every_s)
            self.reap()

    def close(self) -> None:
        """Close every session (their scouts end, their tracks stop) and delete their run
        stores, the ones whose tracks are still stopping too."""
        for s in self.sessions.values():
            s.close()
        self.sessions.clear()
        remove_runs(self.settings.data_dir / "runs")
