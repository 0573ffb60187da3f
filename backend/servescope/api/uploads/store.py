"""Uploads and saved scenarios in the data directory, indexed by an embedded SQLite database.

    data_dir/index.sqlite3      one row per upload (with its owner's digest) / scenario
    data_dir/blobs/<id>         an upload's bytes, named only by its server-made id
    data_dir/tmp/<random>.part  an upload in flight; removed at start-up

A blob is renamed into place inside the transaction that inserts its row, so a crash leaves
either both or neither; start-up removes what a crash between the two left behind. Threads
share the index as api/uploads/index_db.py shares it. An upload's digest (its bytes, options and
owner) makes a retried upload answer with the stored row. An upload is only found for its owner
(api/uploads/owner.py); a row from before owners has none and is found for nobody.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from servescope.api.errors import SessionError, UploadError
from servescope.api.uploads.index_db import IndexDb
from servescope.api.uploads.recent import Recent

log = logging.getLogger(__name__)
SCHEMA = """
CREATE TABLE IF NOT EXISTS traces (
  id TEXT PRIMARY KEY, filename TEXT NOT NULL, format TEXT NOT NULL, num_requests INTEGER,
  size INTEGER NOT NULL, summary TEXT NOT NULL, created_s REAL NOT NULL,
  options TEXT NOT NULL DEFAULT '{}', digest TEXT);
CREATE TABLE IF NOT EXISTS scenarios (
  id TEXT PRIMARY KEY, name TEXT NOT NULL, body TEXT NOT NULL, created_s REAL NOT NULL);
"""

GZIP_MAGIC = b"\x1f\x8b"  # RFC 1952's ID1 ID2


def is_gzip(path: Path) -> bool:
    """Whether the file starts as a gzip stream does."""
    with path.open("rb") as handle:
        return handle.read(2) == GZIP_MAGIC


TRACE_COLUMNS = ("id", "filename", "format", "num_requests", "size", "summary", "created_s",
                 "options")


def new_id() -> str:
    """An unguessable id: 128 random bits, URL-safe."""
    return secrets.token_urlsafe(16)


def valid_id(text: str) -> bool:
    return 16 <= len(text) <= 64 and all(c.isalnum() or c in "-_" for c in text)


class Store(IndexDb):
    def __init__(self, data_dir: Path) -> None:
        self.root = Path(data_dir)
        self.blobs = self.root / "blobs"
        self.tmp = self.root / "tmp"
        for d in (self.root, self.blobs, self.tmp):
            d.mkdir(parents=True, exist_ok=True)
        super().__init__(self.root / "index.sqlite3")
        # trace id -> what it loads as (api/uploads/trace_workload.py): at most four traces and a
        # million requests (about 150 B a request spec) beyond the sessions running them
        self.loaded = Recent(4, max_weight=1_000_000)
        _create(self.db)
        self.recover()

    def recover(self) -> None:
        """Drop in-flight uploads, blobs without a row and rows without a blob."""
        for part in self.tmp.iterdir():
            part.unlink(missing_ok=True)
        known = {row[0] for row in self.db.execute("SELECT id FROM traces")}
        for blob in self.blobs.iterdir():
            if blob.name not in known:
                blob.unlink(missing_ok=True)
        for tid in known:
            if not (self.blobs / tid).is_file():
                self.db.execute("DELETE FROM traces WHERE id = ?", (tid,))

    # -- uploads --

    def temp_path(self) -> Path:
        return self.tmp / f"{new_id()}.part"

    def commit_trace(self, part: Path, filename: str, fmt: str, num_requests: int | None,
                     summary: dict[str, Any], options: dict[str, Any] | None = None, *,
                     owner: str) -> dict[str, Any]:
        """`options`: what the upload asked for (window, sample, ...), applied at each load;
        `owner`: the uploader's digest (api/uploads/owner.py). The same bytes with the same
        options from the same owner answer with the row already stored. A blob is stored
        inflated, so the readers inflate nothing: a gzip part is a ValueError."""
        if is_gzip(part):
            raise ValueError("a stored trace is inflated: this one is still gzip")
        options = options or {}
        digest = _digest(part, options, owner)
        tid = new_id()
        size = part.stat().st_size
        name = filename[:200].encode(errors="replace").decode()  # the answer must be writable
        if not writable(summary):
            raise UploadError(422, "the trace's summary holds text with an unpaired "
                              "surrogate, which no answer can carry", field="file")
        row = (tid, name, fmt, num_requests, size, json.dumps(summary), time.time(),
               json.dumps(options), digest, owner)
        blob = self.blobs / tid
        try:
            with self.transaction() as db:
                known = db.execute("SELECT id FROM traces WHERE digest = ?",
                                   (digest,)).fetchone()
                if known is not None:
                    tid = known[0]
                else:
                    db.execute(f"INSERT INTO traces ({', '.join(TRACE_COLUMNS)}, digest, owner)"
                               " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row)
                    os.replace(part, blob)
                    _fsync_dir(self.blobs)
        except BaseException:
            blob.unlink(missing_ok=True)  # rolled back: the row is gone, so must the blob be
            raise
        stored = self.trace(tid, owner)
        assert stored is not None
        return stored

    def trace(self, tid: str, owner: str) -> dict[str, Any] | None:
        """The upload `tid` if `owner` (an owner digest) made it; None for anyone else, as for
        an id that does not exist."""
        if not valid_id(tid):
            return None
        cur = self.db.execute(f"SELECT {', '.join(TRACE_COLUMNS)} FROM traces "
                              "WHERE id = ? AND owner = ?", (tid, owner))
        row = cur.fetchone()
        return None if row is None else _trace_row(row)

    def traces(self, owner: str) -> list[dict[str, Any]]:
        """The uploads `owner` made, oldest first."""
        cur = self.db.execute(f"SELECT {', '.join(TRACE_COLUMNS)} FROM traces "
                              "WHERE owner = ? ORDER BY created_s", (owner,))
        return _listable("trace", (_trace_row(r) for r in cur))

    def trace_path(self, tid: str, owner: str) -> Path | None:
        return self.blobs / tid if self.trace(tid, owner) is not None else None

    def claim(self, tid: str, payer: str) -> None:
        """Charge a stored upload to `payer` (api/web/clients.py's payer_of), unless another
        payer stored the same bytes first."""
        with self.transaction() as db:
            db.execute("UPDATE traces SET payer = ? WHERE id = ? AND payer IS NULL",
                       (payer, tid))

    def stored_bytes(self, payer: str | None = None) -> int:
        """Bytes of the stored uploads: all of them, or those charged to `payer`."""
        where, args = ("WHERE payer = ?", (payer,)) if payer is not None else ("", ())
        row = self.db.execute(f"SELECT COALESCE(SUM(size), 0) FROM traces {where}",
                              args).fetchone()
        return int(row[0])

    def expire(self, before_s: float, keep: set[str]) -> list[str]:
        """Delete the uploads stored before `before_s` (epoch seconds) but those in `keep`."""
        old = [r[0] for r in self.db.execute("SELECT id FROM traces WHERE created_s < ?",
                                             (before_s,)) if r[0] not in keep]
        for tid in old:
            with self.transaction() as db:
                db.execute("DELETE FROM traces WHERE id = ?", (tid,))
            (self.blobs / tid).unlink(missing_ok=True)
        return old

    # -- scenarios --

    def save_scenario(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        """The scenario's answer, checked writable before its row is committed (a SessionError
        on `configs` otherwise)."""
        sid = new_id()
        answer = {"id": sid, "name": name[:200], **body}
        if not writable(answer):
            raise SessionError("the session's config or workload holds text with an unpaired "
                               "surrogate, which no answer can carry", "configs")
        with self.transaction() as db:
            db.execute("INSERT INTO scenarios VALUES (?, ?, ?, ?)",
                       (sid, name[:200], json.dumps(body), time.time()))
        return answer

    def scenario(self, sid: str) -> dict[str, Any] | None:
        if not valid_id(sid):
            return None
        row = self.db.execute("SELECT id, name, body FROM scenarios WHERE id = ?",
                              (sid,)).fetchone()
        found = _listable("scenario", [] if row is None else [_scenario_row(row)])
        return found[0] if found else None

    def scenarios(self) -> list[dict[str, Any]]:
        cur = self.db.execute("SELECT id, name, body FROM scenarios ORDER BY created_s")
        return _listable("scenario", (_scenario_row(r) for r in cur))


def writable(value: Any) -> bool:
    """Whether a JSON answer can carry `value` (no string in it holds an unpaired surrogate)."""
    try:
        json.dumps(value, ensure_ascii=False).encode()
    except (UnicodeEncodeError, ValueError, TypeError):
        return False
    return True


def _listable(kind: str, rows: Iterator[dict[str, Any]] | list[dict[str, Any]],
              ) -> list[dict[str, Any]]:
    """The rows an answer can carry; one stored before that was checked is skipped and logged,
    so one bad row never breaks a listing for everyone."""
    out = []
    for row in rows:
        if writable(row):
            out.append(row)
        else:
            log.warning("%s %s skipped: its text cannot be written as UTF-8", kind,
                        ascii(row.get("id", row.get("trace_id")))[:40])
    return out


def _scenario_row(row: tuple[Any, ...]) -> dict[str, Any]:
    return {"id": row[0], "name": row[1], **json.loads(row[2])}


def _trace_row(row: tuple[Any, ...]) -> dict[str, Any]:
    keys = ("trace_id", *TRACE_COLUMNS[1:])
    out = dict(zip(keys, row, strict=True))
    out["summary"] = json.loads(out["summary"])
    out["options"] = json.loads(out["options"])
    return out


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _digest(part: Path, options: dict[str, Any], owner: str) -> str:
    h = hashlib.sha256()
    with part.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            h.update(chunk)
    h.update(b"\0" + json.dumps(options, sort_keys=True).encode())
    h.update(b"\0" + owner.encode())
    return h.hexdigest()


def _create(db: sqlite3.Connection) -> None:
    """The index's tables, an index from before each column brought up to date."""
    db.execute("PRAGMA journal_mode=WAL")
    db.executescript(SCHEMA)
    columns = {row[1] for row in db.execute("PRAGMA table_info(traces)")}
    if "options" not in columns:  # an index from before upload options
        db.execute("ALTER TABLE traces ADD COLUMN options TEXT NOT NULL DEFAULT '{}'")
    if "digest" not in columns:  # an index from before idempotent uploads
        db.execute("ALTER TABLE traces ADD COLUMN digest TEXT")
    if "owner" not in columns:  # an index from before private uploads
        db.execute("ALTER TABLE traces ADD COLUMN owner TEXT")
    if "payer" not in columns:  # an index from before per-client quotas charged payers
        db.execute("ALTER TABLE traces ADD COLUMN payer TEXT")
    if "client" in columns:  # its quota key held the raw upload token: the owner instead
        db.execute("UPDATE traces SET payer = CASE WHEN client LIKE 'upload:%' "
                   "THEN 'upload:' || owner WHEN client LIKE 'address:%' THEN client "
                   "END WHERE payer IS NULL")
        db.execute("ALTER TABLE traces DROP COLUMN client")
    db.execute("CREATE UNIQUE INDEX IF NOT EXISTS traces_digest ON traces(digest)")
