"""An SQLite file that threads share: each thread has its own connection (sqlite3's must not be
shared), and one lock serialises writers, so transactions never nest or interleave."""

from __future__ import annotations

import sqlite3
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class _Connection(sqlite3.Connection):
    """A connection a weak reference can name (sqlite3's own cannot be)."""


class IndexDb:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        # for close(); a thread's own closes when the thread ends (sync routes' threads come
        # and go: a connection kept for each would hold its files and page cache for good)
        self._connections: weakref.WeakSet[sqlite3.Connection] = weakref.WeakSet()
        self._connect_lock = threading.Lock()
        self._write_lock = threading.Lock()

    @property
    def db(self) -> sqlite3.Connection:
        """This thread's connection."""
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, isolation_level=None, timeout=30,
                                 check_same_thread=False,  # closed by close(), any thread
                                 factory=_Connection)
            db.execute("PRAGMA synchronous=FULL")
            self._local.db = db
            with self._connect_lock:
                self._connections.add(db)
        return db

    def close(self) -> None:
        with self._connect_lock:
            for db in list(self._connections):
                db.close()
            self._connections.clear()
        self._local = threading.local()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One writer at a time; a failure rolls back."""
        db = self.db
        with self._write_lock:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
