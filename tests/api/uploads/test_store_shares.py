"""The store's part of fair shares: whose an upload is (the first client to store its bytes),
the bytes stored in all and per client, uploads deleted once past their retention, and no
connection kept open for a thread that has ended."""

from __future__ import annotations

import gc
import sqlite3
import threading
import time

from servescope.api.uploads.store import Store

OWNER = "owner-digest-1"  # whose uploads these are (api/uploads/owner.py's owner_of)


def put(store: Store, text: str) -> dict:
    part = store.temp_path()
    part.write_text(text)
    return store.commit_trace(part, "t.json", "json", 1, {}, owner=OWNER)


def test_stored_bytes_count_per_payer_and_the_first_claim_holds(tmp_path):
    store = Store(tmp_path)
    a, b = put(store, "a" * 100), put(store, "b" * 30)
    store.claim(a["trace_id"], "address:1")
    store.claim(b["trace_id"], "address:2")
    store.claim(a["trace_id"], "address:2")  # the same bytes again: still the first payer's
    assert store.stored_bytes() == 130
    assert store.stored_bytes("address:1") == 100
    assert store.stored_bytes("address:2") == 30
    assert store.stored_bytes("address:3") == 0


def test_expired_uploads_go_with_their_blobs_but_those_kept(tmp_path):
    store = Store(tmp_path)
    old, kept = put(store, "old"), put(store, "kept")
    cutoff = time.time() + 1  # both were stored before it
    new = put(store, "new")
    store.db.execute("UPDATE traces SET created_s = ? WHERE id = ?",
                     (cutoff + 10, new["trace_id"]))
    assert store.expire(cutoff, {kept["trace_id"]}) == [old["trace_id"]]
    assert store.trace(old["trace_id"], OWNER) is None
    assert not (tmp_path / "blobs" / old["trace_id"]).exists()
    assert store.trace(kept["trace_id"], OWNER) and store.trace(new["trace_id"], OWNER)



def live_connections() -> int:
    gc.collect()  # a connection may sit in a reference cycle until a collection
    return sum(isinstance(o, sqlite3.Connection) for o in gc.get_objects())


def test_threads_that_come_and_go_leave_no_connection_behind(tmp_path):
    # the threads that serve sync routes end after a while idle and new ones start: each
    # uses the store on a connection of its own, which must not outlive it
    store = Store(tmp_path)
    before = live_connections()
    for _ in range(20):
        thread = threading.Thread(target=store.stored_bytes)
        thread.start()
        thread.join()
    assert live_connections() == before
    store.close()
