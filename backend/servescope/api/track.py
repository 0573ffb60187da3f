"""One engine's record stream inside a session, simulated ahead to the end on a thread of its
own: each record packed once for every viewer and kept on disk (api/run_store.py) with a
keyframe every N records, so any position is reachable as soon as its record exists."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from servescope.api import protocol as P
from servescope.api.keyframes import keyframe, keyframe_cost
from servescope.api.run_pack import RunPack
from servescope.api.run_store import Row, RunStore, StorageError, storage_error
from servescope.api.serialize import dumps, normalize, pack
from servescope.api.step_pack import pack_step
from servescope.api.stream_state import StreamState
from servescope.api.track_source import Source
from servescope.api.wire_text import Template, dump
from servescope.core.decode_run import DecodeRun
from servescope.core.engine import Engine
from servescope.core.records import StepRecord
from servescope.core.request_table import request_table
from servescope.observability.meter import Meter
from servescope.observability.spill import Spill

BATCH_RECORDS = 1024  # records per transaction at most
BATCH_S = 0.05  # and at least this often, so that the first frame and the scrubber move soon


class RecordLimitError(Exception):
    """The run has more records than the server keeps for a session."""


class Track:
    """What the event loop reads (head, last_start_s, last_step, done, error, summary) changes
    only on the loop's thread, in `_publish`, after the batch it describes is committed."""

    def __init__(self, number: int, source: Source, requests: list[dict[str, Any]],
                 num_gpu_blocks: int, keyframe_interval: int, max_records: int, path: Path,
                 summary: Callable[[], dict[str, Any]] | None = None,
                 enable_prefix_caching: bool = True) -> None:
        self.number = number
        self.source = source
        self.num_gpu_blocks = num_gpu_blocks
        self.interval = keyframe_interval
        self.max_records = max_records
        self._summary = summary
        self.requests = requests
        self.state = StreamState(requests)
        self.store = RunStore(path)  # StorageError when the data directory cannot hold it
        first = keyframe(self.state, number, num_gpu_blocks)
        self.store.append([], [(-1, dump(first))])
        self._frame = Template(P.Step.model_construct(engine=number), "records")
        self._kf_size = 0  # JSON size of the last keyframe (0: none taken yet)
        self._kf_cost = keyframe_cost(len(requests), num_gpu_blocks)
        self.head = -1  # index of the last stored record
        self.last_start_s = float("-inf")
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
        self._preempted: set[str] = set()  # preempted and waiting to resume (the thread's)
        self._thread: threading.Thread | None = None
        self._rows: list[Row] = []  # the batch being built (the thread's)
        self._kfs: list[tuple[int, str]] = []
        self._last_kf, self._since_kf, self._flushed = -1, 0, time.monotonic()

    def start(self) -> None:
        """Simulate to the end on a daemon thread; progress is published on the running loop."""
        loop = asyncio.get_running_loop()
        self._thread = threading.Thread(target=self._run, args=(loop,), daemon=True,
                                        name=f"track-{self.store.path.stem}")
        self._thread.start()

    # -- the simulating thread --

    def _run(self, loop: asyncio.AbstractEventLoop) -> None:
        error: str | None = None
        summary: dict[str, Any] | None = None
        try:
            self._simulate(loop)
            summary = self._summary() if self._summary and not self._closed else {}
        except (StorageError, RecordLimitError) as err:
            error = str(err)
        except OSError as err:  # the meter's file (the store's errors are StorageErrors)
            error = str(storage_error(err, self.store.path))
        except Exception as err:  # noqa: BLE001 - any failure is reported, not raised
            error = (f"the simulation failed after {self._stored} records: "
                     f"{type(err).__name__}: {err}")
        self._post(loop, None, True, error, summary)
        with self._lock:
            if self._closed:
                self._remove_files()
            self._thread = None

    def _simulate(self, loop: asyncio.AbstractEventLoop) -> None:
        n = 0
        while not self._closed:
            try:
                item = self.source()
                if item is not None and n >= self.max_records:
                    raise self._limit_error()
            except Exception:
                self._flush(loop)  # what came before the failure stays readable
                raise
            if item is None:
                break
            if isinstance(item, DecodeRun):
                n = self._store_run(loop, item, n)
            else:
                self._store_record(item, n)
                n += 1
                self._flush_due(loop)
        self._flush(loop)

    def _limit_error(self) -> RecordLimitError:
        return RecordLimitError(
            f"the run stopped at this server's max_records_per_session "
            f"({self.max_records:,} records) before its end; simulate a window or a sample "
            f"of the trace")

    def _store_record(self, item: dict[str, Any] | StepRecord, n: int) -> None:
        if isinstance(item, StepRecord):
            rec, text = pack_step(self.state, item, n)
        else:
            rec = normalize(item)
            rec["iter"] = n  # the stream's own index, whatever a recording says
            text = dumps(pack(self.state, rec))
        self.meter.observe(rec)  # append-only: the loop reads it up to the published head
        self._rows.append((n, rec["step"], rec["time_s"],
                           rec["time_s"] + rec["step_time_ms"] / 1000.0, text,
                           sum(e["n"] for e in rec["scheduled"]), len(rec["running"]),
                           len(rec["waiting"]), rec["kv_usage"], *self._state_counts(rec)))
        if self._keyframe_due(n, len(text)):
            if isinstance(item, StepRecord):  # the keyframe keeps its record whole
                rec["kv_events"] = item.event_dicts()
            self._take_keyframe(n)

    def _store_run(self, loop: asyncio.AbstractEventLoop, run: DecodeRun, n: int) -> int:
        """A decode run's records stored in bulk (api/run_pack.py), as _store_record stores
        each of them; the index after its last."""
        num_steps = min(run.num_steps, self.max_records - n)
        packed = RunPack(self.state, run, n)
        packed.observe(self.meter, num_steps)
        a = 0
        while a < num_steps:
            b = min(num_steps, a + max(1, BATCH_RECORDS - len(self._rows)))
            self._rows += packed.rows(a, b, len(self._preempted))
            for j in range(a, b):
                if self._keyframe_due(n + j, len(packed.texts[j])):
                    packed.apply(self.state, a, j + 1)
                    self.state.last = packed.record(j)
                    self._take_keyframe(n + j)
                    a = j + 1
            if a < b:
                packed.apply(self.state, a, b)
            a = b
            self._flush_due(loop)
        if num_steps < run.num_steps:
            self._flush(loop)
            raise self._limit_error()
        return n + num_steps

    def _keyframe_due(self, n: int, size: int) -> bool:
        """After record n of `size` bytes: every `interval` records, and not before the records
        since the last keyframe weigh as much as it does (a big pool's keyframes stay a
        bounded share of the store) nor as much as building it costs (a long request list's
        keyframes stay a bounded share of the time)."""
        self._since_kf += size
        return (n - self._last_kf >= self.interval
                and self._since_kf >= max(self._kf_size, self._kf_cost))

    def _take_keyframe(self, n: int) -> None:
        kf_text = dump(keyframe(self.state, self.number, self.num_gpu_blocks))
        self._kfs.append((n, kf_text))
        self._kf_size = len(kf_text)
        self._last_kf, self._since_kf = n, 0

    def _flush_due(self, loop: asyncio.AbstractEventLoop) -> None:
        if len(self._rows) >= BATCH_RECORDS or time.monotonic() - self._flushed >= BATCH_S:
            self._flush(loop)

    def _state_counts(self, rec: dict[str, Any]) -> tuple[int, int, int]:
        """(num_prefill, num_decode, num_preempted) of a record, for the timeline's density."""
        self._preempted.update(rec["preempted"])
        self._preempted.difference_update(rec["resumed"], rec["new"], rec["finished"])
        decode = sum(1 for e in rec["scheduled"] if e.get("kind") == "decode")
        return len(rec["scheduled"]) - decode, decode, len(self._preempted)

    def _flush(self, loop: asyncio.AbstractEventLoop) -> None:
        rows, kfs = self._rows, self._kfs
        self._rows, self._kfs, self._flushed = [], [], time.monotonic()
        if not rows and not kfs:
            return
        self.store.append(rows, kfs)
        if rows:
            self._stored = rows[-1][0] + 1
            self._post(loop, rows[-1], False, None, None)

    def _post(self, loop: asyncio.AbstractEventLoop, row: Any, done: bool, error: str | None,
              summary: dict[str, Any] | None) -> None:
        try:
            loop.call_soon_threadsafe(self._publish, row, done, error, summary)
        except RuntimeError:  # the loop is closed: nobody is left to tell
            self._closed = True

    # -- the event loop --

    def _publish(self, row: Any, done: bool, error: str | None,
                 summary: dict[str, Any] | None) -> None:
        if row is not None:
            self.head, self.last_step, self.last_start_s = row[0], row[1], row[2]
        if done:
            self.done, self.error, self.summary = True, error, summary
        if not self._closed:
            self.on_progress()

    def keyframe_before(self, iter_: int) -> tuple[int, str]:
        """The latest kept keyframe at or before record `iter_`, as JSON."""
        return self.store.keyframe_before(min(iter_, self.head))

    def frame(self, after: int, upto: int) -> str | None:
        """A `step` message with records after..upto (inclusive); None when there are none."""
        upto = min(upto, self.head)
        if upto <= after:
            return None
        return self._frame.fill(self.store.frame_body(after, upto))

    def index_at_time(self, t: float) -> int:
        """Last stored record that starts at or before simulated time t (-1: none)."""
        if self.head < 0:
            return -1
        if t >= self.last_start_s:
            return self.head
        return self.store.index_at_time(t, self.head)

    def index_at_step(self, step: int) -> int:
        """First stored record whose step clock is >= step (clamped to the head)."""
        return self.store.index_at_step(step, self.head)

    def start_at(self, iter_: int) -> float:
        return self.last_start_s if iter_ == self.head else self.store.start_s(iter_)

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
        with self._lock:
            self._closed = True
            thread = self._thread
            if thread is None:
                self._remove_files()
                return
        if self.done:  # the thread has only its last lines left: let it remove the files now
            thread.join(timeout=5)
