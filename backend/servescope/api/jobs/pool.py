"""Heavy REST work off the event loop: at most `max_jobs` at once, up to `max_waiting` more
waiting for a slot (beyond that refused, busy), each answered within `job_timeout_s`, waiting
included, or refused. `call` and `stream` run a job in a worker process (api/jobs/workers.py: its
own GIL, a memory budget, killed when late); `run` runs a light one (SQLite reads) on a thread.
No job starts while the server's memory (its process and its workers) is over the cap. Answers
several requests share (a run's overview and percentiles) are kept in `shared`
(api/jobs/shared.py)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import weakref
from collections import Counter
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

from servescope.api.errors import JobError, WorkerError
from servescope.api.jobs.shared import SharedAnswers
from servescope.api.jobs.workers import Worker, rss_bytes

T = TypeVar("T")
MIB = 1024 * 1024


class Jobs:
    def __init__(self, max_jobs: int, timeout_s: float, max_waiting: int = 8,
                 memory_cap_mb: int = 0, max_waiting_shared: int = 256) -> None:
        self.max_jobs = max_jobs
        self.timeout_s = timeout_s
        self.max_waiting = max_waiting
        # the line of jobs whose answers requests share (the page's overview and percentiles):
        # one at a time per run and question, so the sessions bound it, not the page loads
        self.max_waiting_shared = max_waiting_shared
        self.memory_cap = memory_cap_mb * MIB  # 0: no cap
        # each worker may map this much beyond what it maps at start (0: unlimited)
        self.budget = self.memory_cap // (max_jobs + 1)
        self.running = 0
        self.kinds: Counter[str] = Counter()  # what the running jobs are, for the busy message
        self.waiting = 0
        self.shared = SharedAnswers()
        self.workers: set[Worker] = set()
        self.others: Callable[[], int] = lambda: 0  # other processes' bytes (the scouts')
        self._freed: asyncio.Event | None = None  # made on the loop that first waits

    def memory(self) -> int:
        """Resident bytes of the server process, its job workers and its scouts."""
        return rss_bytes() + sum(w.rss() for w in self.workers) + self.others()

    def check_memory(self, what: str) -> None:
        if self.memory_cap and (used := self.memory()) > self.memory_cap:
            raise JobError(f"the server holds {used // MIB} MiB, over its memory_cap_mb "
                           f"({self.memory_cap // MIB}); the {what} is refused until "
                           "sessions end", "memory")

    async def run(self, what: str, fn: Callable[..., T], *args: Any) -> T:
        """A light job on a worker thread (the thread runs out its work if it is late)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        await self._take_slot(what, deadline)
        future = loop.run_in_executor(None, functools.partial(fn, *args))
        future.add_done_callback(functools.partial(self._ended, what))
        try:  # asyncio.timeout, not wait_for: on Python 3.11 wait_for loses a cancel that
            # comes as the job ends (api/web/outflow.py)
            async with asyncio.timeout_at(deadline):
                return await asyncio.shield(future)
        except TimeoutError as err:
            raise self._late(what) from err

    async def call(self, what: str, fn: Callable[..., T], *args: Any, shared: bool = False) -> T:
        """`fn(*args)` in a worker process; its value. A `shared` job (its answer kept in
        `shared` for every request that asks the same) waits in the longer line."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        line = self.max_waiting_shared if shared else self.max_waiting
        async with self._worker(what, deadline, fn, args, False, line) as worker:
            _, value = await self._recv(what, worker, deadline - loop.time())
            return value  # type: ignore[no-any-return]

    async def stream(self, what: str, fn: Callable[..., Any], *args: Any,
                     tail: Callable[[str], bytes] | None = None) -> AsyncIterator[bytes]:
        """The byte chunks `fn(*args)` yields in a worker process. Failures before the first
        chunk raise here; later ones end the stream (with `tail(message)` when given). Each
        chunk must come within job_timeout_s of the one before."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        cm = self._worker(what, deadline, fn, args, True, self.max_waiting)
        worker = await cm.__aenter__()
        try:
            first = await self._recv(what, worker, deadline - loop.time())
        except BaseException as err:
            await cm.__aexit__(type(err), err, err.__traceback__)
            raise
        ended: list[bool] = []
        rest = self._rest(what, cm, worker, first, tail, ended)
        # a response that never starts its body (the client left first) never runs the
        # generator's `finally`: free the worker and the slot when it is collected
        weakref.finalize(rest, lambda: ended or loop.call_soon_threadsafe(
            asyncio.ensure_future, cm.__aexit__(None, None, None)))
        return rest

    async def _rest(self, what: str, cm: Any, worker: Worker, first: tuple[str, Any],
                    tail: Callable[[str], bytes] | None,
                    ended: list[bool]) -> AsyncIterator[bytes]:
        ended.append(True)
        try:
            kind, chunk = first
            while kind == "chunk":
                yield chunk
                kind, chunk = await self._recv(what, worker, self.timeout_s)
        except JobError as err:
            if tail is not None:
                yield tail(str(err))
        finally:
            await cm.__aexit__(None, None, None)

    @contextlib.asynccontextmanager
    async def _worker(self, what: str, deadline: float, fn: Callable[..., Any],
                      args: tuple[Any, ...], stream: bool, line: int) -> AsyncIterator[Worker]:
        self.check_memory(what)
        await self._take_slot(what, deadline, line)
        worker: Worker | None = None
        try:
            worker = await Worker.start(fn, args, self.budget, stream)
            self.workers.add(worker)
            yield worker
        finally:
            if worker is not None:
                self.workers.discard(worker)
                await asyncio.to_thread(worker.stop)
            self._release(what)

    async def _recv(self, what: str, worker: Worker, timeout_s: float) -> tuple[str, Any]:
        try:
            return await worker.recv(max(timeout_s, 0.0))
        except TimeoutError as err:
            raise self._late(what) from err
        except WorkerError as err:
            if err.kind == "memory":
                raise JobError(f"the {what} needed more than its memory budget of "
                               f"{self.budget // MIB} MiB (memory_cap_mb / (max_jobs + 1)); "
                               "try a smaller window", "too_large") from err
            if err.kind == "too_large":
                raise JobError(str(err), "too_large") from err
            if err.kind == "died":
                raise JobError(f"the {what} ended early: {err}") from err
            raise JobError(f"the {what} failed: {err}", "internal") from err

    def _late(self, what: str) -> JobError:
        return JobError(f"the {what} took longer than {self.timeout_s:g} s (job_timeout_s); "
                        "try a smaller window")

    async def _take_slot(self, what: str, deadline: float, line: int | None = None) -> None:
        """A slot now, or after waiting in a line of `line` (a page's burst of requests);
        refused when the line is full or the slot does not come within the time budget."""
        line = self.max_waiting if line is None else line
        if self.running >= self.max_jobs and self.waiting >= line:
            raise JobError(f"the server is already running {self.running} heavy jobs "
                           f"({self.running_kinds()}) with {self.waiting} more waiting; try "
                           f"the {what} again shortly")
        self.waiting += 1
        try:
            async with asyncio.timeout_at(deadline):  # (not wait_for: as in run)
                while self.running >= self.max_jobs:
                    self._freed = self._freed or asyncio.Event()
                    self._freed.clear()
                    await self._freed.wait()
        except TimeoutError as err:
            raise JobError(f"the server stayed busy with {self.running} heavy jobs "
                           f"({self.running_kinds()}) for {self.timeout_s:g} s "
                           f"(job_timeout_s); try the {what} again shortly") from err
        finally:
            self.waiting -= 1
        self.running += 1
        self.kinds[what] += 1

    def running_kinds(self) -> str:
        """The running jobs by kind, e.g. "2 overview, 1 csv export"."""
        return ", ".join(f"{n} {what}" for what, n in sorted(self.kinds.items()) if n > 0)

    def _release(self, what: str) -> None:
        self.running -= 1
        self.kinds[what] -= 1
        if self._freed is not None:
            self._freed.set()

    def _ended(self, what: str, future: asyncio.Future[Any]) -> None:
        self._release(what)
        if not future.cancelled():
            future.exception()  # retrieved: a job answered late is not an unhandled error
