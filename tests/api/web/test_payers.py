"""An upload token grants reading an upload, so the quotas charged to its client keep only its
owner digest (api/web/clients.py's payer_of): the raw token is found nowhere in the index on
disk nor in the server's quota tables after it uploaded, created a session and held a socket.
An index from before (its `client` column held `upload:<raw token>`) is rewritten on opening."""

from __future__ import annotations

import json
import sqlite3

from support.server import UPLOAD_TOKEN

from servescope.api.uploads.owner import owner_of
from servescope.api.uploads.store import Store

ROWS = [{"id": "a", "arrival_s": 0.0, "prompt_len": 40, "output_len": 5}]


def everything_on_disk(data_dir) -> bytes:
    return b"".join(p.read_bytes() for p in data_dir.rglob("*") if p.is_file())


def test_the_raw_upload_token_is_in_no_quota_table_nor_the_index(client, settings):
    up = client.post("/api/traces", files={"file": ("t.json", json.dumps(ROWS).encode())})
    assert up.status_code == 201, up.text
    workload = {"trace": up.json()["trace_id"], "upload_token": UPLOAD_TOKEN}
    made = client.post("/api/sessions", json={"workload": workload})
    assert made.status_code == 201, made.text
    state = client.app.state
    with client.websocket_connect(f"/ws/sessions/{made.json()['session_id']}?follow=1"):
        held = repr((dict(state.shares.sockets), state.shares.recent,
                     [s.payer for s in state.registry.sessions.values()]))
    assert "upload:" + owner_of(UPLOAD_TOKEN) in held  # charged to the owner...
    assert UPLOAD_TOKEN not in held  # ...never to the token itself
    client.post("/api/traces", files={"file": ("u.json", b"[]")})  # a checkpoint of the WAL
    assert UPLOAD_TOKEN.encode() not in everything_on_disk(settings.data_dir)


def test_an_index_that_held_raw_tokens_is_rewritten_to_owners(tmp_path):
    Store(tmp_path).close()
    db = sqlite3.connect(tmp_path / "index.sqlite3")  # as an index before payers was written
    db.execute("ALTER TABLE traces RENAME COLUMN payer TO client")
    rows = [("t1", "upload:" + UPLOAD_TOKEN, owner_of(UPLOAD_TOKEN)),
            ("t2", "address:10.0.0.7", owner_of("another-token-xyz")),
            ("t3", "session:raw-session-token", owner_of("another-token-xyz"))]
    db.executemany("INSERT INTO traces (id, filename, format, size, num_requests, summary, "
                   "created_s, client, owner) VALUES (?, 'f', 'json', 1, 1, '{}', 0, ?, ?)",
                   rows)
    db.commit()
    db.close()
    for tid, _, _ in rows:  # a row without its blob is dropped on opening
        (tmp_path / "blobs" / tid).write_bytes(b"[]")
    store = Store(tmp_path)
    payers = dict(store.db.execute("SELECT id, payer FROM traces"))
    assert payers == {"t1": "upload:" + owner_of(UPLOAD_TOKEN), "t2": "address:10.0.0.7",
                      "t3": None}
    columns = {row[1] for row in store.db.execute("PRAGMA table_info(traces)")}
    assert "client" not in columns
    store.close()
