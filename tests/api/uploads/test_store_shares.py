"""The store's part of fair shares: whose an upload is (the first client to store its bytes),
the bytes stored in all and per client, and uploads deleted once past their retention."""

from __future__ import annotations

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
