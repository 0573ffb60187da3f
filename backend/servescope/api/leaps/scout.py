"""The scout: a track's engine run ahead without records in a process of its own (the second
CPU), keeping a checkpoint every second of its time (and more as it nears a seek it is short
of: _near), so that a seek past what the track has stored is answered by a leap
(api/leaps/leap.py) from the checkpoint before it, written into the track's store by this
process, instead of waiting for the track's simulation to get there.

Messages, server to scout: ("leap", position): records from the one at `position` (any of
the three clocks: api/wire/position.py) on, once the scout is past it, and LEAP_AHEAD more. Scout to
server: ("reach", iter, time_s, done) as it runs ahead; ("leap", first, first_start_s,
first_step, last, last_start_s, last_step, done) after each batch a leap commits; ("error",
why). The scout's checkpoints live in its own memory (MAX_CHECKPOINT_BYTES at most)."""

from __future__ import annotations

import bisect
import contextlib
import os
import sys
import threading
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from servescope.api.jobs.workers import CTX, PIECE, end_process, process_rss
from servescope.api.leaps.leap import start_leap, write_next
from servescope.api.records.run_store import Row, RunStore
from servescope.api.records.writer import Writer
from servescope.api.wire.position import Clock, Position
from servescope.api.wire.serialize import request_info
from servescope.core.checkpoint import arrivals, resume, take
from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.request import RequestSpec

CHECKPOINT_S = 1.0  # the scout's CPU seconds between checkpoints
MAX_CHECKPOINT_BYTES = 512 * 1024 * 1024  # past this, every other checkpoint is let go
LEAP_AHEAD = 20_000  # records a leap writes past the one asked for, before it waits
# A scout approaching a seek's target takes a checkpoint once the target is nearer than half
# the way it has come since its last one, if that way took this much CPU at least (each take
# costs about 14 ms: core/checkpoint.py take, 19,365 requests of the conversation trace at
# record 200,000): the leap then re-simulates a few tens of ms, not up to CHECKPOINT_S
MIN_APPROACH_S = 0.05
REPORT_S = 0.1
SCOUT_BATCH = 32  # about 2.5 ms of the scout's engine at a time
SCOUT_NICE = 5  # running ahead: the event loop's process comes first when the CPUs are short


@dataclass
class Job:
    """What the scout process is given: the track's engine config and store; its requests, in
    the track's order, follow on the pipe in pieces (a long list pickled at once would hold the
    GIL, and so the event loop, for a second)."""

    config: EngineConfig
    num_specs: int
    path: Path
    number: int
    num_gpu_blocks: int
    interval: int


class Scouting:
    """The scout's own state: the engine running ahead, its checkpoints, each advance's first
    record (index, start, step clock), and the leap being written (if any)."""

    def __init__(self, job: Job, conn: Link) -> None:
        self.job, self.conn = job, conn
        specs: list[RequestSpec] = []
        while len(specs) < job.num_specs:
            specs += conn.recv()
        self.engine = Engine(job.config, specs)  # the track's engine, at its start
        self.arrivals = arrivals(self.engine)
        self.requests = request_info(specs)
        self.store = RunStore(job.path, create=False)
        self.checkpoints = [take(self.engine)]
        self.checkpoint_at = self.position()  # the engine's position at the last checkpoint
        self.iters, self.times, self.steps = array("q"), array("d"), array("q")
        self.since, self.reported = time.process_time(), 0.0
        self.wanted: Position | None = None  # a leap asked for, not started yet
        self.leap: tuple[Engine, Writer] | None = None
        self.first, self.goal = -1, -1
        self.first_row: tuple[float, int] | None = None
        self.last_row: Row | None = None
        self.turn = threading.Condition()  # one of the two threads at a time (see run)
        self.failure: BaseException | None = None  # the run-ahead thread's, raised by run

    def run(self) -> None:
        """Leaps on this thread, at the process's own priority (a viewer waits for them: a seek
        is interactive work); running ahead on a thread of its own at SCOUT_NICE while nobody
        waits, so that the event loop's process comes first when the CPUs are short."""
        ahead = threading.Thread(target=self._run_ahead, daemon=True, name="scout-ahead")
        ahead.start()
        while self.failure is None:
            if self.conn.poll(0 if self.urgent else REPORT_S):
                self._receive()
            if self.urgent:  # (the run-ahead thread gives way at its next batch)
                with self.turn:
                    self._leap_turn()
                    if not self.urgent:
                        self.turn.notify()  # the run ahead goes on
        raise self.failure

    def _run_ahead(self) -> None:
        if sys.platform == "linux":  # a thread's own nice value (Linux: per thread)
            os.nice(SCOUT_NICE)
        try:
            while True:
                with self.turn:  # released between batches: a leap asked for takes over
                    self.turn.wait_for(lambda: not self.urgent and not self.engine.done)
                    self._advance()
        except BaseException as err:  # noqa: BLE001 - the main thread raises it
            self.failure = err

    @property
    def urgent(self) -> bool:
        """Whether a viewer waits on this scout: a leap asked for, or one being written."""
        return self.wanted is not None or not self.leap_idle

    def _leap_turn(self) -> None:
        if self.wanted is not None and self._resolve(self.wanted):
            self.wanted = None
        if not self.leap_idle:
            assert self.leap is not None
            if not write_next(*self.leap):
                self.goal = -1  # the leap reached the run's end
                self._report_leap(True)
        elif self.wanted is not None and not self.engine.done:
            self._advance(self.wanted)  # short of it: run ahead here, at the viewer's priority

    @property
    def leap_idle(self) -> bool:
        return self.leap is None or self.leap[0].iter > self.goal

    def _receive(self) -> None:
        while self.conn.poll():
            msg = self.conn.recv()
            if msg[0] == "leap":
                self.wanted = msg[1]

    def _advance(self, target: Position | None = None) -> None:
        """A few advances (SCOUT_BATCH) between looks at the pipe and the clocks; approaching
        a seek's `target`, up to the one that crosses it, with a checkpoint taken near it."""
        engine, iters, times, steps = self.engine, self.iters, self.times, self.steps
        for _ in range(SCOUT_BATCH):
            if target is not None and self._near(target):
                self._checkpoint()
            iters.append(engine.iter)
            times.append(engine.time_s)
            steps.append(engine.step_no)
            if not engine.advance_unrecorded() or (target is not None
                                                   and self._first_of(target) is not None):
                break
        if time.process_time() - self.since >= CHECKPOINT_S and not engine.done:
            self._checkpoint()
        if engine.done or time.monotonic() - self.reported >= REPORT_S:
            self.reported = time.monotonic()
            self.conn.send(("reach", engine.iter - 1, engine.time_s, engine.done))

    def position(self) -> tuple[int, float, int]:
        """Where the engine is on each clock (api/wire/position.py): its next record's index,
        the simulated time and the step count it has reached."""
        return self.engine.iter, self.engine.time_s, self.engine.step_no

    def _near(self, target: Position) -> bool:
        """Whether to checkpoint on the way to `target`: nearer than half the way come since
        the last checkpoint, which took MIN_APPROACH_S of CPU at least."""
        clock, value = target
        axis = (Clock.ITER, Clock.TIME, Clock.STEP).index(clock)
        now, then = self.position()[axis], self.checkpoint_at[axis]
        return (2 * (value - now) < now - then
                and time.process_time() - self.since >= MIN_APPROACH_S)

    def _checkpoint(self) -> None:
        self.checkpoints.append(take(self.engine))
        self.checkpoint_at, self.since = self.position(), time.process_time()
        if sum(len(c.blob) for c in self.checkpoints) > MAX_CHECKPOINT_BYTES:
            self.checkpoints = self.checkpoints[:1] + self.checkpoints[2:-1:2] + \
                self.checkpoints[-1:]

    def _resolve(self, target: Position) -> bool:
        """Start or extend a leap to the record at `target`; False while the scout is short
        of it."""
        first = self._first_of(target)
        if first is None:
            return False
        if self.leap is not None and self.first <= first <= self.leap[0].iter:
            self.goal = max(self.goal, first + LEAP_AHEAD)
            return True
        if first < 1:
            return True  # the track's own simulation starts there
        at = bisect.bisect_right([c.iter for c in self.checkpoints], first - 1) - 1
        engine = resume(self.checkpoints[at], self.engine, self.arrivals)
        job = self.job
        self.first, self.goal = first, first + LEAP_AHEAD
        self.first_row = self.last_row = None
        writer = start_leap(engine, first, self.requests, self.store, job.number,
                            job.num_gpu_blocks, job.interval, self._report_rows)
        self.leap = (engine, writer)
        return True

    def _first_of(self, target: Position) -> int | None:
        """The record a leap to `value` starts at (the advance before the one that starts
        past it, or stops past it: its last record may be the one asked for); None when the
        scout is short."""
        clock, value = target
        if clock is Clock.ITER:
            return int(value) if value < self.engine.iter else None
        column = self.times if clock is Clock.TIME else self.steps
        reached = self.engine.time_s if clock is Clock.TIME else self.engine.step_no
        if not self.engine.done and (not column or reached <= value):
            return None
        k = bisect.bisect_right(column, value) - 1
        return max(0, self.iters[max(0, k)] - 1)

    def _report_rows(self, rows: list[Row]) -> None:
        if self.first_row is None:  # the leap's first batch: its first row is record `first`
            self.first_row = (rows[0][2], rows[0][1])
        self.last_row = rows[-1]
        self._report_leap(False)

    def _report_leap(self, done: bool) -> None:
        row = self.last_row
        if self.first_row is not None and row is not None:
            self.conn.send(("leap", self.first, *self.first_row, row[0], row[2], row[1], done))


def main(inbox: Connection, outbox: Connection, job: Job) -> None:
    """The scout process: run ahead until told to stop (its pipes close, or it is killed)."""
    if sys.platform != "linux":  # the whole process (see Scouting.run)
        os.nice(SCOUT_NICE)
    try:
        Scouting(job, Link(inbox, outbox)).run()
    except (EOFError, OSError):
        return  # the track has gone
    except Exception as err:  # noqa: BLE001 - reported to the track, which says why
        with contextlib.suppress(OSError):
            outbox.send(("error", f"{type(err).__name__}: {err}"))


class Link:
    """The scout's two pipes as one: messages in from the track, out to it."""

    def __init__(self, inbox: Connection, outbox: Connection) -> None:
        self.poll, self.recv, self.send = inbox.poll, inbox.recv, outbox.send


Message = tuple[Any, ...]


class Scout:
    """The track's end: starts the process (from the track's thread: its requests are sent in
    pieces), asks it for leaps, and hears its messages on a thread of its own, each handed to
    `on_message` there (("ended", None) when it stops)."""

    def __init__(self, job: Job, specs: list[RequestSpec],
                 on_message: Callable[[Message], None]) -> None:
        inbox, self._to = CTX.Pipe(duplex=False)
        self._from, outbox = CTX.Pipe(duplex=False)
        self.proc = CTX.Process(target=main, args=(inbox, outbox, job), daemon=True,
                                name="servescope-scout")
        self.proc.start()
        inbox.close()
        outbox.close()
        with contextlib.suppress(OSError):  # (it has gone: its pipe says so)
            for k in range(0, len(specs), PIECE):
                self._to.send(specs[k:k + PIECE])
        self._asked: Position | None = None
        self._thread = threading.Thread(target=self._listen, args=(on_message,), daemon=True,
                                        name="scout-listener")
        self._thread.start()

    def _listen(self, on_message: Callable[[Message], None]) -> None:
        while True:
            try:
                msg = self._from.recv()
            except (EOFError, OSError):
                on_message(("ended", None))
                return
            on_message(msg)

    def ask(self, target: Position) -> None:
        """A leap to the record at `target`."""
        if self._asked == target:
            return
        self._asked = target
        with contextlib.suppress(OSError):
            self._to.send(("leap", target))

    def rss(self) -> int:
        return process_rss(self.proc)

    def stop(self) -> None:
        """Kill the process and reap it (its listener then hears "ended")."""
        end_process(self.proc)
        with contextlib.suppress(OSError):
            self._to.close()
