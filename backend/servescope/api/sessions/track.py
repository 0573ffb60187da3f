"""One engine's record stream inside a session, simulated ahead to the end on a thread of its
own: each record packed once for every viewer and kept on disk (api/records/run_store.py) with a
keyframe every N records, so any position is reachable as soon as its record exists."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from servescope.api.errors import RecordLimitError, StorageError
from servescope.api.leaps.leaping import Leaping, LeapRange
from servescope.api.records.fleet_frames import FleetFrames
from servescope.api.records.run_store import Row, RunStore, storage_error
from servescope.api.records.track_source import Source
from servescope.api.records.writer import Writer
from servescope.api.wire import protocol as P
from servescope.api.wire.keyframes import keyframe, keyframe_cost
from servescope.api.wire.position import Clock, Position
from servescope.api.wire.stream_state import StreamState
from servescope.api.wire.text import Template, dump
from servescope.core.engine import Engine
from servescope.core.request_table import request_table
from servescope.observability.meter import Meter
from servescope.observability.spill import Spill


class Track:
    """What the event loop reads (head, last_start_s, last_step, done, error, summary) changes
    only on the loop's thread, in `_publish`, after the batch it describes is committed."""

    def __init__(self, number: int, source: Source, requests: Sequence[dict[str, Any]],
                 num_gpu_blocks: int, keyframe_interval: int, max_records: int, path: Path,
                 summary: Callable[[], dict[str, Any]] | None = None,
                 enable_prefix_caching: bool = True) -> None:
        self.number = number
        self.source = source
        self.num_gpu_blocks = num_gpu_blocks
        self.max_records = max_records
        self._summary = summary
        self.requests = requests
        self.state = StreamState(requests)
        self.store = RunStore(path)  # StorageError when the data directory cannot hold it
        first = keyframe(self.state, number, num_gpu_blocks)
        self.store.append([], [(-1, dump(first))])
        self._frame = Template(P.Step.model_construct(engine=number), "records")
        self.head = -1  # index of the last stored record
        self.last_start_s = float("-inf")
        self.fleet_stored_s = float("-inf")  # a fleet's frames' time when records were last stored
        self.last_step = -1
        self.done = False
        self.error: str | None = None  # why the background simulation stopped early
        self.summary: dict[str, Any] | None = None
        self.engine: Engine | None = None  # for per-request metrics; None for a replay
        # GET /metrics; its columns past the newest values in a file beside the store's
        self.meter = Meter(request_table(requests), enable_prefix_caching, Spill(path.parent))
        self.on_progress: Callable[[], None] = lambda: None
        self._lock = threading.Lock()
        self._closed = False
        self._readers = 0  # jobs reading the track's file from another process
        self._orphaned = False  # closed while they read: the last one removes the files
        self._stored = 0  # records committed (the thread's count; the loop reads head)
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.leaping: Leaping | None = None  # seeks past the head, for a long engine run
        self.no_leap: str | None = None  # why a long run has no leaping (its page says so)
        self.fleet: FleetFrames | None = None  # a fleet's replicas, folded as it runs
        self.writer = Writer(self.state, self.store, number, num_gpu_blocks, keyframe_interval,
                             keyframe_cost(len(requests), num_gpu_blocks), self._on_flush,
                             self.meter)  # the thread's

    def start(self) -> None:
        """Simulate to the end on a daemon thread; progress is published on the running loop."""
        loop = self._loop = asyncio.get_running_loop()
        self._thread = threading.Thread(target=self._run, args=(loop,), daemon=True,
                                        name=f"track-{self.store.path.stem}")
        self._thread.start()

    # -- the simulating thread --

    def _run(self, loop: asyncio.AbstractEventLoop) -> None:
        error: str | None = None
        summary: dict[str, Any] | None = None
        try:
            self.writer.store_all(self._next_item, self.max_records, lambda: self._closed)
            summary = self._summary() if self._summary and not self._closed else {}
        except (StorageError, RecordLimitError) as err:
            error = str(err)
        except OSError as err:  # the meter's file (the store's errors are StorageErrors)
            error = str(storage_error(err, self.store.path))
        except Exception as err:  # noqa: BLE001 - any failure is reported, not raised
            error = (f"the simulation failed after {self._stored} records: "
                     f"{type(err).__name__}: {err}")
        self._post(loop, None, True, error, summary)
        if self.leaping is not None:
            self.leaping.stop()  # every record is stored: no leap is needed any more
        with self._lock:
            if self._closed:
                self._remove_files()
            self._thread = None

    def _next_item(self) -> Any:
        """The source's next item; while a seek waits on the scout, the scout's first."""
        if self.leaping is not None:
            self.leaping.hold()  # a seek waits on the scout: leave it the CPU
        return self.source()

    def _on_flush(self, rows: list[Row]) -> None:
        row = rows[-1]
        self._stored = row[0] + 1
        loop = self._loop
        assert loop is not None
        # a fleet's frames have folded no record past the ones stored now (its source folds the
        # other replicas' records on the way to the viewed one's, this thread's)
        fleet_s = self.fleet.last_start_s if self.fleet is not None else None
        self._post(loop, row, False, None, None, fleet_s)
        leaping = self.leaping
        if leaping is not None and leaping.scout is None and not self._closed:
            leaping.start(lambda msg: self._post_scout(loop, msg))  # the first frame is out

    def _post(self, loop: asyncio.AbstractEventLoop, row: Any, done: bool, error: str | None,
              summary: dict[str, Any] | None, fleet_s: float | None = None) -> None:
        try:
            loop.call_soon_threadsafe(self._publish, row, done, error, summary, fleet_s)
        except RuntimeError:  # the loop is closed: nobody is left to tell
            self._closed = True

    def _post_scout(self, loop: asyncio.AbstractEventLoop, msg: tuple[Any, ...]) -> None:
        """A scout's message, heard on its listener's thread, for the loop."""
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is left to tell
            loop.call_soon_threadsafe(self._hear, msg)

    # -- the event loop --

    def _publish(self, row: Any, done: bool, error: str | None,
                 summary: dict[str, Any] | None, fleet_s: float | None = None) -> None:
        if row is not None:
            self.head, self.last_step, self.last_start_s = row[0], row[1], row[2]
        if fleet_s is not None:
            self.fleet_stored_s = fleet_s
        if done:
            self.done, self.error, self.summary = True, error, summary
        if self.leaping is not None:
            self.leaping.passed(self.head)
        if not self._closed:
            self.on_progress()

    def _hear(self, msg: tuple[Any, ...]) -> None:
        assert self.leaping is not None
        self.leaping.hear(msg, self.head)
        if not self._closed:
            self.on_progress()

    # -- where a viewer can be: the track's own records, and a leap's (api/leaps/leaping.py) --

    def end_of(self, iter_: int) -> int | None:
        """The last record of the stored stretch that holds record `iter_` (or the keyframe
        after it); None when none does."""
        if self.leaping is None:
            return self.head if iter_ <= self.head else None
        return self.leaping.end_of(iter_, self.head)

    def _range(self, pos: int) -> LeapRange | None:
        """The leap whose records `pos` is in (past the head), if any."""
        r = self.leaping.range if self.leaping is not None else None
        return r if r is not None and pos > self.head and r.first - 1 <= pos else None

    def keyframe_before(self, iter_: int) -> tuple[int, str]:
        """The latest kept keyframe at or before record `iter_`, as JSON."""
        end = self.end_of(iter_)
        return self.store.keyframe_before(min(iter_, self.head if end is None else end))

    def frame(self, after: int, upto: int) -> str | None:
        """A `step` message with records after..upto (inclusive); None when there are none."""
        end = self.end_of(after)
        upto = min(upto, self.head if end is None else end)
        if upto <= after:
            return None
        return self._frame.fill(self.store.frame_body(after, upto))

    def index_at_time(self, t: float) -> int:
        """Last stored record that starts at or before simulated time t (-1: none)."""
        r = self.leaping.range if self.leaping is not None else None
        if r is not None and r.first_start_s <= t and self.last_start_s <= t:
            return r.last if t >= r.last_start_s else self.store.index_at_time(t, r.last)
        if self.head < 0:
            return -1
        if t >= self.last_start_s:
            return self.head
        return self.store.index_at_time(t, self.head)

    def index_at_step(self, step: int) -> int:
        """First stored record whose step clock is >= step (clamped to the head)."""
        r = self.leaping.range if self.leaping is not None else None
        if r is not None and r.first_step <= step and self.last_step < step:
            return self.store.index_at_step(step, r.last)
        return self.store.index_at_step(step, self.head)

    def start_at(self, iter_: int) -> float:
        return self.last_start_s if iter_ == self.head else self.store.start_s(iter_)

    def frontier_s(self, pos: int) -> float:
        """The start of the last stored record from `pos` on (how far a viewer there can play);
        a fleet's: of the last record of any replica (its lanes move while the viewed idles)."""
        if self.fleet is not None:  # as far as the viewed replica's stored records are known
            return self.fleet.last_start_s if self.done else self.fleet_stored_s
        r = self._range(pos)
        end = self.end_of(pos)
        return r.last_start_s if r is not None and end == r.last else self.last_start_s

    def at_end(self, pos: int, t: float) -> bool:
        """Whether a viewer at record `pos` and simulated time t has seen the whole run: a
        fleet's ends at the last step of any replica, not the viewed one's."""
        if self.fleet is not None and t < self.fleet.last_start_s:
            return False
        r = self._range(pos)
        return (self.done and pos == self.head) or (r is not None and r.done and pos == r.last)

    def reach(self) -> tuple[int, float]:
        """The last record a seek can reach now, and the simulated time there (the scout's,
        past the head)."""
        scout = self.leaping
        if scout is None or self.done or scout.reach <= self.head:
            return self.head, self.frontier_s(self.head)
        return scout.reach, scout.reach_s

    def has(self, target: Position) -> bool:
        """Whether the record at `target` is stored, asking the scout for a leap to it when it
        is not (and the track has one)."""
        clock, value = target
        leaping = self.leaping
        if self.done or (self.frontier_s(self.head) > value if clock is Clock.TIME else
                         self.head >= value if clock is Clock.ITER else self.last_step >= value):
            return True
        if leaping is None:
            return False
        leaping.ask(target)
        return leaping.has(target)

    def index_at(self, target: Position) -> int:
        """The stored record a seek to `target` shows."""
        clock, value = target
        if clock is Clock.TIME:
            return self.index_at_time(value)
        if clock is Clock.STEP:
            return self.index_at_step(int(value))
        return int(value) if self.end_of(int(value)) is not None else self.head

    def time_at(self, pos: int, target: Position) -> float:
        """The simulated time a seek to `target` that shows record `pos` stands at: the record's
        start; a fleet's, the time asked (up to its last step: its other replicas' lanes are
        drawn there, whatever the viewed one does)."""
        start = self.start_at(pos) if pos >= 0 else float("-inf")
        clock, value = target
        if self.fleet is None or clock is not Clock.TIME:
            return start
        return max(start, min(value, self.fleet.last_start_s))

    def done_message(self) -> str:
        return dump(P.Done(engine=self.number, summary=self.summary or {},
                           num_records=self.head + 1, error=self.error))

    @property
    def closed(self) -> bool:
        return self._closed

    @contextlib.contextmanager
    def reading(self) -> Iterator[Path]:
        """The track's file, for a job that reads it in a worker process: kept until the job
        is done, even if the track is closed meanwhile (a reconfigure while the page asks)."""
        with self._lock:
            self._readers += 1
        try:
            yield self.store.path
        finally:
            with self._lock:
                self._readers -= 1
                if self._orphaned and not self._readers:
                    self.store.remove()

    def _remove_files(self) -> None:
        """Delete the files now, or when the last job reading them ends (holding the lock)."""
        if self._readers:
            self._orphaned = True
        else:
            self.store.remove()

    def close(self) -> None:
        """Stop the simulation and delete the track's files (now, or when its thread ends)."""
        if self.leaping is not None:
            self.leaping.stop()
        with self._lock:
            self._closed = True
            thread = self._thread
            if thread is None:
                self._remove_files()
                return
        if self.done:  # the thread has only its last lines left: let it remove the files now
            thread.join(timeout=5)
