"""Heavy work for REST (summaries' exports, full diagnosis) on worker threads, never the event
loop: at most `max_jobs` at once, up to `max_waiting` more waiting for a slot (beyond that
refused, busy), each answered within `job_timeout_s`, waiting included, or refused (the thread
runs out its bounded work and frees its slot when it ends)."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any, TypeVar

from servescope.api.session import SessionError

T = TypeVar("T")


class JobError(SessionError):
    """Refused or too slow: the route answers 503 with this message."""

    def __init__(self, message: str) -> None:
        super().__init__(message, None, "busy")


class Jobs:
    def __init__(self, max_jobs: int, timeout_s: float, max_waiting: int = 8) -> None:
        self.max_jobs = max_jobs
        self.timeout_s = timeout_s
        self.max_waiting = max_waiting
        self.running = 0
        self.waiting = 0
        self._freed: asyncio.Event | None = None  # made on the loop that first waits

    async def run(self, what: str, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        await self._take_slot(what, deadline)
        future = loop.run_in_executor(None, functools.partial(fn, *args))
        future.add_done_callback(self._ended)
        try:
            return await asyncio.wait_for(asyncio.shield(future), deadline - loop.time())
        except TimeoutError as err:
            raise JobError(f"the {what} took longer than {self.timeout_s:g} s "
                           "(job_timeout_s); try a smaller window") from err

    async def _take_slot(self, what: str, deadline: float) -> None:
        """A slot now, or after waiting in line (a page's burst of requests); refused when the
        line is full or the slot does not come within the time budget."""
        if self.running >= self.max_jobs and self.waiting >= self.max_waiting:
            raise JobError(f"the server is already running {self.running} heavy jobs "
                           f"(exports, diagnoses); try the {what} again shortly")
        self.waiting += 1
        try:
            while self.running >= self.max_jobs:
                self._freed = self._freed or asyncio.Event()
                self._freed.clear()
                left = deadline - asyncio.get_running_loop().time()
                await asyncio.wait_for(self._freed.wait(), max(left, 0.0))
        except TimeoutError as err:
            raise JobError(f"the server stayed busy with {self.running} heavy jobs for "
                           f"{self.timeout_s:g} s (job_timeout_s); try the {what} again "
                           "shortly") from err
        finally:
            self.waiting -= 1
        self.running += 1

    def _ended(self, future: asyncio.Future[Any]) -> None:
        self.running -= 1
        if self._freed is not None:
            self._freed.set()
        if not future.cancelled():
            future.exception()  # retrieved: a job answered late is not an unhandled error
