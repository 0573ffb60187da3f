"""One track's packed records and keyframes on disk (SQLite, WAL): written in batches by the
track's background simulation, read by the event loop (seek, frames) through the store's own
connection and by jobs (exports, diagnosis, overview, timeline) each through one of its own.

    data_dir/runs/<session>-<n>.sqlite3   records(iter, step, start_s, end_s, packed,
                                                  + the overview's and the timeline's
                                                  count columns)
                                          keyframes(iter, msg)

Why SQLite and not Arrow/Parquet (docs/protocol.md, "Simulating ahead"): a seek is one
B-tree lookup on an indexed column (tens of microseconds, whatever the run's length), a frame
is a range scan of `iter`, a batch of records is one transaction, readers in WAL mode see only
committed batches while the writer appends, and memory is SQLite's page cache (bounded), not
the run. Parquet files are immutable once written: appending while readers seek would mean
many small files or rewriting, and a seek would decode a whole row group.
"""

from __future__ import annotations

import contextlib
import errno
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from servescope.api.errors import StorageError

SCHEMA = """
CREATE TABLE records (iter INTEGER PRIMARY KEY, step INTEGER NOT NULL, start_s REAL NOT NULL,
                      end_s REAL NOT NULL, packed TEXT NOT NULL,
                      num_scheduled_tokens INTEGER NOT NULL, num_running INTEGER NOT NULL,
                      num_waiting INTEGER NOT NULL, kv_usage REAL NOT NULL,
                      num_prefill INTEGER NOT NULL, num_decode INTEGER NOT NULL,
                      num_preempted INTEGER NOT NULL, num_waiting_for_kv INTEGER NOT NULL);
CREATE INDEX records_start ON records(start_s);
CREATE INDEX records_step ON records(step);
CREATE TABLE keyframes (iter INTEGER PRIMARY KEY, msg TEXT NOT NULL);
"""
# iter, step, start_s, end_s, packed, num_scheduled_tokens, num_running, num_waiting, kv_usage,
# num_prefill, num_decode (requests scheduled a prefill chunk / a decode token), num_preempted
# (waiting requests that were preempted and not yet resumed), num_waiting_for_kv (P/D decode side:
# waiting requests admitted with their remote KV in flight)
Row = tuple[int, int, float, float, str, int, int, int, float, int, int, int, int]
CACHE_KIB = 4096  # SQLite page cache per connection: the memory a store holds, whatever its size
BUSY_MS = 60_000  # how long a writer waits for the other's transaction (a batch takes ms)



def storage_error(err: OSError | sqlite3.Error, path: Path) -> StorageError:
    full = getattr(err, "errno", None) == errno.ENOSPC or "full" in str(err).lower()
    what = "the data directory is full" if full else "the data directory is not writable"
    return StorageError(f"{what} ({path.parent}): {err}; the run's records cannot be kept",
                        full)


def _connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
    return db


class StoreReader:
    """A track's file read through one connection, on one thread: the event loop's (RunStore's
    own) or a job's (`open_reader`). Never share one across threads: a statement in flight on
    one holds the snapshot it began with, and another thread's query on the same connection
    reads that snapshot too (a seek then missed the batches committed since)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._reader = db

    def frame_body(self, after: int, upto: int) -> str:
        rows = self._reader.execute(
            "SELECT packed FROM records WHERE iter > ? AND iter <= ? ORDER BY iter",
            (after, upto)).fetchall()
        return ",".join(r[0] for r in rows)

    def keyframe_before(self, iter_: int) -> tuple[int, str]:
        row = self._reader.execute("SELECT iter, msg FROM keyframes WHERE iter <= ? "
                                   "ORDER BY iter DESC LIMIT 1", (iter_,)).fetchone()
        return int(row[0]), str(row[1])

    def index_at_time(self, t: float, head: int) -> int:
        """Last record up to `head` starting at or before t (-1: none)."""
        row = self._reader.execute("SELECT max(iter) FROM records WHERE start_s <= ? AND "
                                   "iter <= ?", (t, head)).fetchone()
        return -1 if row[0] is None else int(row[0])

    def index_at_step(self, step: int, head: int) -> int:
        """First record whose step clock is >= step, clamped to `head`."""
        row = self._reader.execute("SELECT min(iter) FROM records WHERE step >= ? AND "
                                   "iter <= ?", (step, head)).fetchone()
        return head if row[0] is None else int(row[0])

    def iter_range(self, head: int, t0: float, t1: float) -> tuple[int, int]:
        """(first, last) record up to `head` that may overlap [t0, t1]: the one running at t0
        (or the first), to the last starting by t1; last < first when there is none."""
        return max(0, self.index_at_time(t0, head)), self.index_at_time(t1, head)

    def state_counts(self, first: int, last: int) -> list[tuple[Any, ...]]:
        """Records first..last in order: (iter, start_s, end_s, num_prefill, num_decode,
        num_running, num_waiting, num_preempted, num_waiting_for_kv)."""
        return self._reader.execute(
            "SELECT iter, start_s, end_s, num_prefill, num_decode, num_running, num_waiting, "
            "num_preempted, num_waiting_for_kv FROM records WHERE iter >= ? AND iter <= ? "
            "ORDER BY iter",
            (first, last)).fetchall()

    def state_bins(self, first: int, last: int, t0: float, width: float,
                   bins: int) -> list[tuple[Any, ...]]:
        """Records first..last grouped by the bin their step starts in: [bin, busy seconds, then
        num_prefill, num_decode, num_running, num_waiting, num_preempted, num_waiting_for_kv each
        times its step's seconds, summed]. Coarse (a step counts whole in its start bin): for
        long windows."""
        dt = "(end_s - start_s)"
        return self._reader.execute(
            f"SELECT min(max(CAST((start_s - ?) / ? AS INTEGER), 0), ?) AS bin, sum({dt}), "
            f"sum(num_prefill * {dt}), sum(num_decode * {dt}), sum(num_running * {dt}), "
            f"sum(num_waiting * {dt}), sum(num_preempted * {dt}), "
            f"sum(num_waiting_for_kv * {dt}) FROM records "
            "WHERE iter >= ? AND iter <= ? GROUP BY bin ORDER BY bin",
            (t0, width, bins - 1, first, last)).fetchall()

    def kv_holds(self, first: int, last: int, head: int) -> list[tuple[Any, ...]]:
        """The idle time after records first..last (up to `head`) in which a P/D decode replica's
        requests wait for their remote KV: a record listing some holds its waiting requests till
        the next record starts (api/reports/timeline.py). [end_s, the next start_s,
        num_waiting, num_preempted, num_waiting_for_kv] each, in order."""
        return self._reader.execute(
            "SELECT r.end_s, n.start_s, r.num_waiting, r.num_preempted, r.num_waiting_for_kv "
            "FROM records r JOIN records n ON n.iter = r.iter + 1 WHERE r.iter >= ? AND "
            "r.iter <= ? AND n.iter <= ? AND r.num_waiting_for_kv > 0 AND n.start_s > r.end_s "
            "ORDER BY r.iter", (first, last, head)).fetchall()

    def span(self, head: int) -> tuple[float, float] | None:
        """(first start, last end) of the records up to `head`; None when there are none."""
        t0, t1 = self._reader.execute("SELECT min(start_s), max(end_s) FROM records WHERE "
                                      "iter <= ?", (head,)).fetchone()
        return None if t0 is None else (float(t0), float(t1))

    def start_s(self, iter_: int) -> float:
        row = self._reader.execute("SELECT start_s FROM records WHERE iter = ?",
                                   (iter_,)).fetchone()
        return float(row[0])

    def span_s(self, first: int, upto: int) -> tuple[float, float]:
        """(start of record `first`, end of record `upto`) in simulated seconds."""
        row = self._reader.execute("SELECT (SELECT start_s FROM records WHERE iter = ?), "
                                   "(SELECT end_s FROM records WHERE iter = ?)",
                                   (first, upto)).fetchone()
        return float(row[0]), float(row[1])

    def overview_bins(self, head: int, bins: int) -> tuple[float, float, list[tuple[Any, ...]]]:
        """(first start, last end, rows per time bin that has records: [bin, first iter, last
        iter, tokens, busy seconds, max running, max waiting, mean KV usage, max KV usage, first
        start, last end]) of the records up to `head`; a record is in the bin it starts in."""
        span = self.span(head)
        if span is None:
            return 0.0, 0.0, []
        t0, t1 = span
        width = max(t1 - t0, 1e-9) / bins
        rows = self._reader.execute(
            "SELECT min(CAST((start_s - ?) / ? AS INTEGER), ?) AS bin, min(iter), max(iter), "
            "sum(num_scheduled_tokens), sum(end_s - start_s), max(num_running), "
            "max(num_waiting), avg(kv_usage), max(kv_usage), min(start_s), max(end_s) "
            "FROM records WHERE iter <= ? GROUP BY bin ORDER BY bin",
            (t0, width, bins - 1, head)).fetchall()
        return t0, t1, rows

    def packed_records(self, upto: int, first: int = 0) -> Iterator[str]:
        """The packed texts of records first..upto, read in pages."""
        at = first - 1
        while at < upto:
            rows = self._reader.execute("SELECT iter, packed FROM records WHERE iter > ? AND "
                                        "iter <= ? ORDER BY iter LIMIT 1024",
                                        (at, upto)).fetchall()
            if not rows:
                return
            at = rows[-1][0]
            for _, text in rows:
                yield text


class RunStore(StoreReader):
    """Created empty (the file must not exist), or with `create` False a second writer of one
    that does (a leap's, in the scout's process: api/leaps/scout.py); `remove()` deletes its
    files."""

    def __init__(self, path: Path, create: bool = True) -> None:
        self.path = path
        try:
            if create:
                path.parent.mkdir(parents=True, exist_ok=True)
                db = _connect(path)
                db.execute("PRAGMA journal_mode=WAL")
                db.executescript(SCHEMA)
            else:
                db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=rw", uri=True,
                                     isolation_level=None, check_same_thread=False)
            db.execute(f"PRAGMA busy_timeout={BUSY_MS}")  # the other writer's batch
            db.execute("PRAGMA synchronous=OFF")  # a run's store does not outlive the process
        except (OSError, sqlite3.Error) as err:
            if create:
                self.remove()
            raise storage_error(err, path) from err
        self._writer = db
        super().__init__(_connect(path))

    # -- writing (the simulating thread only) --

    def append(self, rows: list[Row],
               keyframes: list[tuple[int, str]]) -> None:
        """One transaction: every row and keyframe of the batch, or none of them. A row or
        keyframe a leap stored already is stored again: it is the same (api/leaps/leap.py)."""
        db = self._writer
        try:
            db.execute("BEGIN IMMEDIATE")
            db.executemany("INSERT OR REPLACE INTO records VALUES "
                           "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
            db.executemany("INSERT OR REPLACE INTO keyframes VALUES (?, ?)", keyframes)
            db.execute("COMMIT")
        except (OSError, sqlite3.Error) as err:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            raise storage_error(err, self.path) from err

    def close(self) -> None:
        for db in (getattr(self, "_writer", None), getattr(self, "_reader", None)):
            if db is not None:
                with contextlib.suppress(sqlite3.Error):
                    db.close()

    def remove(self) -> None:
        self.close()
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(OSError):
                Path(f"{self.path}{suffix}").unlink()


def remove_runs(directory: Path) -> None:
    """Delete every run store in `directory` (data_dir/runs): a previous process's at start,
    whose sessions nobody owns any more, and this process's at a clean shutdown, however far
    their tracks had simulated (a file still open is freed when its connection closes)."""
    if directory.is_dir():
        for stale in directory.iterdir():
            with contextlib.suppress(OSError):
                stale.unlink()


@contextlib.contextmanager
def open_reader(path: Path) -> Iterator[StoreReader]:
    """A reader of a track's file that exists, on a fresh connection (any thread or process:
    the jobs read a track's file by its path); when the track was removed meanwhile (a
    reconfigure or a reap), this fails instead of creating an empty file in its place."""
    db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True,
                         isolation_level=None, check_same_thread=False)
    try:
        db.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
        yield StoreReader(db)
    finally:
        db.close()
