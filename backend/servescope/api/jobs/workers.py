"""Worker processes for heavy REST jobs, so that they never hold the event loop's GIL: each job
is a fresh process forked from a preloaded fork server, its address space capped
(RLIMIT_AS: what it maps at start plus its budget, which its long list arguments, sent in
pieces after the start, count against) and killed when its time is up. Results come back over
a pipe: one value, or a stream of byte chunks."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import resource
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from typing import Any

from servescope.api.errors import WorkerError

CTX = multiprocessing.get_context("forkserver")
CTX.set_forkserver_preload(["servescope.api.reports.work"])  # numpy and the core, imported once
PAGE = os.sysconf("SC_PAGE_SIZE")
WORKER_NICE = 10
# A list argument longer than this goes after the start, this many items a message: pickling
# 200,000 request rows in one call holds the GIL, and so the event loop, for a third of a second
PIECE = 4096



def rss_bytes(pid: int | str = "self") -> int:
    """Resident memory of a process (0 once it has gone)."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0


def tree_rss_bytes(pid: int) -> int:
    """Resident memory of a process and all its descendants (Ray's raylet, GCS and workers
    under the sweep driver)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:  # "pid (comm) state ppid ..."
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += rss_bytes(p)
        todo += children.get(p, [])
    return total


def _mapped_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * PAGE


class _Long:
    """Stands for a long list argument, sent in pieces after the start."""

    def __init__(self, n: int) -> None:
        self.n = n


def _is_long(arg: Any) -> bool:
    return isinstance(arg, list) and len(arg) > PIECE


def _feed(feed: Connection, args: tuple[Any, ...]) -> None:
    """The long list arguments, piece by piece (the GIL is let go between pieces)."""
    try:
        for arg in args:
            if _is_long(arg):
                for k in range(0, len(arg), PIECE):
                    feed.send(arg[k:k + PIECE])
    except OSError:  # the worker has gone: its pipe says why
        pass
    finally:
        feed.close()


def _gather(feed: Connection, args: tuple[Any, ...]) -> tuple[Any, ...]:
    out = []
    for arg in args:
        if isinstance(arg, _Long):
            items: list[Any] = []
            while len(items) < arg.n:
                items += feed.recv()
            arg = items
        out.append(arg)
    feed.close()
    return tuple(out)


def _main(out: Connection, feed: Connection, fn: Callable[..., Any], args: tuple[Any, ...],
          budget: int, stream: bool) -> None:
    """The worker: cap its address space, gather its long arguments, run `fn`, send ("value",
    v), ("chunk", bytes)... then ("end", None), or ("error", (kind, message))."""
    os.nice(WORKER_NICE)  # the event loop's process comes first when the CPUs are short
    limit = _mapped_bytes() + budget if budget else resource.RLIM_INFINITY
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
    try:
        args = _gather(feed, args)
        if stream:
            for chunk in fn(*args):
                out.send(("chunk", chunk))
            out.send(("end", None))
        else:
            out.send(("value", fn(*args)))
    except MemoryError:
        out.send(("error", ("memory", "")))
    except Exception as err:  # noqa: BLE001 - reported to the route, which names it
        kind = getattr(err, "kind", "failed")
        out.send(("error", (kind, str(err) or type(err).__name__)))
    finally:
        out.close()


class Worker:
    """One job in its own process; `recv` waits (off the loop) for its next message."""

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...], budget: int,
                 stream: bool) -> None:
        reader, writer = CTX.Pipe(duplex=False)
        feed_reader, feed = CTX.Pipe(duplex=False)
        self.conn = reader
        short = tuple(_Long(len(a)) if _is_long(a) else a for a in args)
        self.proc = CTX.Process(target=_main, args=(writer, feed_reader, fn, short, budget,
                                                    stream), daemon=True, name="servescope-job")
        self.proc.start()  # pickles the arguments: callers start it off the event loop
        writer.close()
        feed_reader.close()
        _feed(feed, args)

    @classmethod
    async def start(cls, fn: Callable[..., Any], args: tuple[Any, ...], budget: int,
                    stream: bool) -> Worker:
        return await asyncio.to_thread(cls, fn, args, budget, stream)

    async def recv(self, timeout_s: float) -> tuple[str, Any]:
        return await asyncio.to_thread(self._recv, timeout_s)

    def _recv(self, timeout_s: float) -> tuple[str, Any]:
        if not self.conn.poll(timeout_s):
            raise TimeoutError
        try:
            kind, payload = self.conn.recv()
        except (EOFError, OSError):
            self.proc.join(5)
            code = self.proc.exitcode
            raise WorkerError("died", f"the worker process ended ({code})") from None
        if kind == "error":
            raise WorkerError(*payload)
        return kind, payload

    def rss(self) -> int:
        return process_rss(self.proc)

    def stop(self) -> None:
        """Kill it if it still runs, and reap it (off the loop: the join may wait)."""
        end_process(self.proc)
        self.conn.close()


def process_rss(proc: Any) -> int:
    return rss_bytes(proc.pid) if proc.pid else 0


def end_process(proc: Any) -> None:
    """Kill a process if it still runs, and reap it."""
    if proc.is_alive():
        proc.kill()
    proc.join(5)


def chunks(lines: Iterator[str], size: int = 1 << 20) -> Iterator[bytes]:
    """Text pieces joined into chunks of about `size` bytes (fewer messages on the pipe)."""
    buf: list[str] = []
    n = 0
    for line in lines:
        buf.append(line)
        n += len(line)
        if n >= size:
            yield "".join(buf).encode()
            buf, n = [], 0
    if buf:
        yield "".join(buf).encode()
