"""The sessions this server process holds (one worker: they live in memory), with limits and
the reaping of sessions nobody has watched for the idle time."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from servescope.api import protocol as P
from servescope.api.jobs import Jobs
from servescope.api.session import Session, SessionError
from servescope.api.settings import Settings
from servescope.api.store import Store, new_id


class Registry:
    def __init__(self, settings: Settings, store: Store,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self.store = store
        self.clock = clock
        self.sessions: dict[str, Session] = {}
        self.jobs = Jobs(settings.max_jobs, settings.job_timeout_s)
        runs = settings.data_dir / "runs"  # a previous process's run stores: nobody owns them
        if runs.is_dir():
            for stale in runs.iterdir():
                stale.unlink(missing_ok=True)

    def create(self) -> Session:
        if len(self.sessions) >= self.settings.max_sessions:
            self.reap()
        if len(self.sessions) >= self.settings.max_sessions:
            raise SessionError(f"this server holds at most {self.settings.max_sessions} "
                               "sessions; close one or try later", None, "limit")
        session = Session(new_id(), self.settings, self.store, self.jobs, self.clock)
        self.sessions[session.id] = session
        return session

    async def create_configured(self, msg: P.Configure) -> Session:
        session = self.create()
        try:
            await session.configure(msg)
        except Exception:
            self.sessions.pop(session.id, None)
            raise
        return session

    def get(self, sid: str) -> Session | None:
        return self.sessions.get(sid)

    def reap(self) -> list[str]:
        """Drop sessions without viewers idle longer than the idle time."""
        now = self.clock()
        gone = [sid for sid, s in self.sessions.items() if not s.viewers
                and now - s.last_active > self.settings.session_idle_s]
        for sid in gone:
            self.sessions.pop(sid).close()
        return gone

    async def reap_loop(self, every_s: float = 30.0) -> None:
        while True:
            await asyncio.sleep(every_s)
            self.reap()

    def close(self) -> None:
        for s in self.sessions.values():
            s.close()
        self.sessions.clear()
