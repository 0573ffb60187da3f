"""Helpers for the bound-before-expand attacks (tests/hostile/test_bounds_*.py): a real server
on 127.0.0.1 whose memory growth is read from /proc, raw HTTP that streams a body without
holding it, and multipart uploads built by hand."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.server import Server

MB = 1024 * 1024


def vm_kib(pid: int, field: str) -> int:
    """A `/proc/PID/status` figure (VmRSS, VmHWM) in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


class Watched:
    """A server started for one test; `growth_mb()` is its peak resident memory (VmHWM) over
    what it held once started and warmed (a first upload and session)."""

    def __init__(self, data_dir: Path, **env: str) -> None:
        self.server = Server(data_dir, **env)
        self.pid = self.server.proc.pid
        self.port = self.server.port
        self.base_kib = vm_kib(self.pid, "VmRSS")

    def rebase(self) -> None:
        self.base_kib = max(self.base_kib, vm_kib(self.pid, "VmHWM"))

    def growth_mb(self) -> float:
        return (vm_kib(self.pid, "VmHWM") - self.base_kib) / 1024

    def healthy(self) -> bool:
        with urllib.request.urlopen(self.server.url + "/healthz", timeout=10) as r:
            return r.status == 200

    def stop(self) -> None:
        self.server.stop()


@dataclass
class Answer:
    status: int
    body: bytes
    seconds: float

    def json(self) -> Any:
        return json.loads(self.body)


def multipart(fields: dict[str, tuple[str, bytes]]) -> tuple[bytes, str]:
    """(body, content type) of a multipart/form-data body: name -> (filename, bytes)."""
    boundary = "hostileboundsBoundary7d1"
    parts = []
    for name, (filename, data) in fields.items():
        head = (f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; '
                f'filename="{filename}"\r\nContent-Type: application/octet-stream\r\n\r\n')
        parts.append(head.encode() + data + b"\r\n")
    return b"".join(parts) + f"--{boundary}--\r\n".encode(), \
        f"multipart/form-data; boundary={boundary}"


def upload(url: str, filename: str, data: bytes) -> Answer:
    """POST /api/traces with `data` as the file field, timed."""
    body, kind = multipart({"file": (filename, data)})
    request = urllib.request.Request(url + "/api/traces", body, {"Content-Type": kind})
    start = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=120) as r:
            return Answer(r.status, r.read(), time.monotonic() - start)
    except urllib.error.HTTPError as err:
        return Answer(err.code, err.read(), time.monotonic() - start)


def stream_post(port: int, path: str, kind: str, length: int, chunks: Iterable[bytes],
                timeout_s: float = 60.0) -> Answer:
    """POST `length` declared bytes to 127.0.0.1:port, sent chunk by chunk until the server
    answers or stops reading; the answer's status and body, timed from the first byte."""
    start = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
        head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: {kind}\r\n"
                f"Content-Length: {length}\r\nConnection: close\r\n\r\n")
        sock.sendall(head.encode())
        sock.setblocking(False)
        received = b""
        for chunk in chunks:
            received += _drain(sock)
            if b"\r\n\r\n" in received:
                break
            try:
                sock.sendall(chunk)
            except (BlockingIOError, BrokenPipeError, ConnectionResetError):
                break  # the server stopped reading: its answer is on the way
        sock.settimeout(timeout_s)  # blocking again, within the deadline
        received += _read_rest(sock)
    return _answer(received, time.monotonic() - start)


def _drain(sock: socket.socket) -> bytes:
    try:
        return sock.recv(65536)
    except (BlockingIOError, ConnectionResetError):
        return b""


def _read_rest(sock: socket.socket) -> bytes:
    out = b""
    try:
        while data := sock.recv(65536):
            out += data
    except (ConnectionResetError, TimeoutError):
        pass
    return out


def _answer(raw: bytes, seconds: float) -> Answer:
    head, _, body = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/") else 0
    return Answer(status, body, seconds)


async def follower_flood(ws_url: str, session_id: str, count: int, size: int) -> list[int]:
    """`count` follower sockets (no Origin, no token) that each send one JSON array of about
    `size` bytes of numbers; the close codes the server answered with."""
    import asyncio

    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    message = json.dumps([1.5] * (size // 5))
    codes = []
    for _ in range(count):
        async with connect(f"{ws_url}/ws/sessions/{session_id}?follow=1", max_size=None) as ws:
            await ws.send(message)
            try:
                while True:
                    await asyncio.wait_for(ws.recv(), 30)
            except ConnectionClosed:
                pass
            codes.append(ws.protocol.close_rcvd.code if ws.protocol.close_rcvd else 0)
    return codes


if __name__ == "__main__":  # the flood in a process of its own: python -m support.hostile_bounds
    import asyncio
    import sys

    url, sid, num, num_bytes = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    print(json.dumps(asyncio.run(follower_flood(url, sid, num, num_bytes))))
