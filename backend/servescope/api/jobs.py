"""Heavy work for REST (summaries' exports, full diagnosis) on worker threads, never the event
loop: at most `max_jobs` at once (more are refused, busy), each answered within `job_timeout_s`
or refused (the thread runs out its bounded work and frees its slot when it ends)."""

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
    def __init__(self, max_jobs: int, timeout_s: float) -> None:
        self.max_jobs = max_jobs
        self.timeout_s = timeout_s
        self.running = 0

    async def run(self, what: str, fn: Callable[..., T], *args: Any) -> T:
        if self.running >= self.max_jobs:
            raise JobError(f"the server is already running {self.running} heavy jobs "
                           f"(exports, diagnoses); try the {what} again shortly")
        self.running += 1
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(None, functools.partial(fn, *args))
        future.add_done_callback(self._ended)
        try:
            return await asyncio.wait_for(asyncio.shield(future), self.timeout_s)
        except TimeoutError as err:
            raise JobError(f"the {what} took longer than {self.timeout_s:g} s "
                           "(job_timeout_s); try a smaller window") from err

    def _ended(self, future: asyncio.Future[Any]) -> None:
        self.running -= 1
        if not future.cancelled():
            future.exception()  # retrieved: a job answered late is not an unhandled error
