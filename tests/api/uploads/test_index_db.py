"""api/uploads/index_db.py: a connection per thread, a transaction that fails leaves nothing,
and close() closes every thread's connection."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from servescope.api.uploads.index_db import IndexDb


def test_each_thread_has_its_own_connection_and_close_closes_them_all(tmp_path):
    index = IndexDb(tmp_path / "i.sqlite3")
    mine = index.db
    theirs: list[sqlite3.Connection] = []
    worker = threading.Thread(target=lambda: theirs.append(index.db))
    worker.start()
    worker.join()
    assert mine is index.db and theirs[0] is not mine
    index.close()
    with pytest.raises(sqlite3.ProgrammingError):
        mine.execute("SELECT 1")


def test_a_failed_transaction_rolls_back_and_the_next_one_commits(tmp_path):
    index = IndexDb(tmp_path / "i.sqlite3")
    index.db.execute("CREATE TABLE t (x INTEGER)")
    with pytest.raises(RuntimeError), index.transaction() as db:
        db.execute("INSERT INTO t VALUES (1)")
        raise RuntimeError("half way")
    with index.transaction() as db:
        db.execute("INSERT INTO t VALUES (2)")
    assert index.db.execute("SELECT x FROM t").fetchall() == [(2,)]
    index.close()
