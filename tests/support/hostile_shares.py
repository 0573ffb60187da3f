"""Helpers for tests/hostile's fair-share tests against a real server process: plain HTTP calls
that answer status, JSON and headers, a WebSocket opened from a chosen loopback address (a
second client is a second address in 127.0.0.0/8), the server's resident memory, and small
uploads."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from typing import Any

from websockets.asyncio.client import connect

from support.server import Server

# the whole hostile suite (slow tests, long fuzz): `make test-hostile` sets it
HOSTILE_ALL = os.environ.get("SERVESCOPE_HOSTILE_ALL") == "1"
TINY = {"requests": [{"id": "a", "arrival_s": 0.0, "prompt_len": 8, "output_len": 2}]}
CONFIGURE = json.dumps({"type": "configure", "v": 1, "workload": TINY})


def call(server: Server, method: str, path: str, body: Any = None,
         headers: dict[str, str] | None = None, raw: bytes | None = None,
         kind: str = "application/json") -> tuple[int, Any, dict[str, str]]:
    """(status, JSON or None, headers) of one request; errors are answers too."""
    data = raw if raw is not None else None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(server.url + path, data=data, method=method,
                                     headers={"content-type": kind, **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return r.status, _json(r.read()), dict(r.headers)
    except urllib.error.HTTPError as err:
        return err.code, _json(err.read()), dict(err.headers)


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None


def multipart(text: str | bytes, name: str = "t.jsonl") -> tuple[bytes, str]:
    data = text.encode() if isinstance(text, str) else text
    body = (f"--b0\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\""
            "\r\nContent-Type: application/octet-stream\r\n\r\n").encode() + data + \
        b"\r\n--b0--\r\n"
    return body, "multipart/form-data; boundary=b0"


def trace_of(num_bytes: int, salt: str = "") -> str:
    """A Mooncake-style JSONL trace of about `num_bytes` (each row unique to `salt`)."""
    row = '{{"timestamp": {i}, "input_length": 16, "output_length": 4, "note": "{salt}"}}\n'
    rows, size, i = [], 0, 0
    while size < num_bytes:
        line = row.format(i=i, salt=salt)
        rows.append(line)
        size += len(line)
        i += 1
    return "".join(rows)


async def open_socket(server: Server, path: str, address: str = "127.0.0.1") -> Any:
    """A page's WebSocket (our Origin) from `address`, one of the loopback range's."""
    return await connect(server.ws_url + path, origin=server.url,  # type: ignore[arg-type]
                         local_addr=(address, 0), open_timeout=30)


async def first_message(ws: Any, timeout: float = 30.0) -> dict[str, Any]:
    """The first message that is not `progress`."""
    import asyncio

    async with asyncio.timeout(timeout):
        while True:
            msg = json.loads(await ws.recv())
            if msg["type"] != "progress":
                return msg


def rss_mb(server: Server) -> float:
    """The server process's resident memory (VmRSS), MiB."""
    with open(f"/proc/{server.proc.pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0
