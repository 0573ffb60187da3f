"""The catalog of public traces (traces/catalog.json): pinned upstream URLs, checksums, licence
and attribution. `fetch` downloads into the data directory through a temporary file, verifies
it, and renames it into place, so a failed or tampered download never leaves a file behind."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

REPO = Path(__file__).resolve().parents[3]
CATALOG_PATH = REPO / "traces" / "catalog.json"
CHUNK = 1 << 20


class CatalogError(Exception):
    """A catalog or download problem, reported in one line."""


@dataclass(frozen=True)
class Entry:
    name: str
    title: str
    format: str
    url: str
    filename: str
    licence: str
    attribution: str
    sha256: str | None = None
    git_blob_sha1: str | None = None  # pins files too large for the mirror we hashed from
    bytes: int | None = None
    rows: int | None = None
    upstream: dict[str, str] = field(default_factory=dict)
    notes: str = ""

    @property
    def verifiable(self) -> bool:
        return bool(self.sha256 or self.git_blob_sha1)


def load_catalog(path: Path | None = None) -> list[Entry]:
    path = Path(path or os.environ.get("SERVESCOPE_CATALOG") or CATALOG_PATH)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise CatalogError(f"{path}: cannot read the catalog: {err}") from err
    known = set(Entry.__dataclass_fields__)
    entries = []
    for k, item in enumerate(data.get("traces", []) if isinstance(data, dict) else []):
        if not isinstance(item, dict) or not {"name", "url", "filename"} <= set(item):
            raise CatalogError(f"{path}: entry {k} needs name, url and filename")
        entries.append(Entry(**{key: v for key, v in item.items() if key in known}))
    return entries


def find(entries: list[Entry], name: str) -> Entry:
    for entry in entries:
        if entry.name == name:
            return entry
    raise CatalogError(f"no trace named {name!r} (known: {', '.join(e.name for e in entries)})")


def data_dir(override: Path | None = None) -> Path:
    """Where downloads are cached: --data-dir, else $SERVESCOPE_DATA_DIR, else <repo>/data."""
    return Path(override or os.environ.get("SERVESCOPE_DATA_DIR") or REPO / "data") / "traces"


def cached_path(entry: Entry, root: Path | None = None) -> Path:
    return data_dir(root) / entry.filename


def digests(path: Path) -> dict[str, str]:
    """sha256 and the git blob id (sha1 of "blob <size>\\0" + content) of a file."""
    sha256 = hashlib.sha256()
    blob = hashlib.sha1(f"blob {path.stat().st_size}\0".encode(), usedforsecurity=False)
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            sha256.update(chunk)
            blob.update(chunk)
    return {"sha256": sha256.hexdigest(), "git_blob_sha1": blob.hexdigest()}


def check(entry: Entry, path: Path) -> dict[str, str]:
    """The file's digests; CatalogError when one the catalog pins does not match."""
    found = digests(path)
    for key in ("sha256", "git_blob_sha1"):
        expected = getattr(entry, key)
        if expected and found[key] != expected.lower():
            raise CatalogError(f"{entry.name}: {key} mismatch: expected {expected}, "
                               f"got {found[key]}")
    return found


def fetch(entry: Entry, root: Path | None = None, allow_unverified: bool = False,
          opener: Callable[..., Any] = urllib.request.urlopen,
          timeout_s: float = 60.0) -> tuple[Path, dict[str, str]]:
    """(path, digests) of the verified download; a cached copy that verifies is reused."""
    if not entry.verifiable and not allow_unverified:
        raise CatalogError(f"{entry.name}: the catalog pins no checksum for this file (its "
                           "upstream is not versioned); pass --allow-unverified to take it as is")
    target = cached_path(entry, root)
    if target.is_file():
        try:
            return target, check(entry, target)
        except CatalogError:
            target.unlink()  # a stale or damaged copy: fetch it again
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{entry.filename}.", suffix=".part", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            _download(entry, out, opener, timeout_s)
        found = check(entry, Path(tmp))
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target, found


def _download(entry: Entry, out: IO[bytes], opener: Callable[..., Any], timeout_s: float) -> None:
    limit = entry.bytes
    try:
        with opener(entry.url, timeout=timeout_s) as response:
            total = 0
            while chunk := response.read(CHUNK):
                total += len(chunk)
                if limit is not None and total > limit:
                    raise CatalogError(f"{entry.name}: download is larger than the catalog's "
                                       f"{limit} bytes")
                out.write(chunk)
    except OSError as err:  # URLError, HTTPError, timeouts and refused connections
        raise CatalogError(f"{entry.name}: download failed: {err}") from err
    if limit is not None and total != limit:
        raise CatalogError(f"{entry.name}: got {total} bytes, the catalog says {limit}")
