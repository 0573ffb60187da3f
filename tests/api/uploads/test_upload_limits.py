"""Upload limits that hold after decompression: a gzip bomb is refused with bounded memory and
nothing stored; a gzip upload is stored inflated; a 413 closes the connection rather than
reading the rest of a huge body."""

from __future__ import annotations

import gzip
import json
import socket
import time
from pathlib import Path

from fastapi.testclient import TestClient
from support.server import ORIGIN, UPLOADS, Server, make_settings

from servescope.api.app import create_app

ROWS = [{"id": f"r{i}", "arrival_s": i * 0.1, "prompt_len": 20 + i, "output_len": 3}
        for i in range(40)]


def bomb(inflated: int) -> bytes:
    """A gzip of `inflated` zero bytes (about 1/1000 of that): one member per MiB."""
    return gzip.compress(bytes(1 << 20), 9) * (inflated >> 20)


def peak_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def multipart(name: str, data: bytes) -> tuple[bytes, str]:
    head = (f'--b0\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n").encode()
    return head + data + b"\r\n--b0--\r\n", "multipart/form-data; boundary=b0"


def test_a_gzip_bomb_is_refused_with_bounded_memory_and_nothing_stored(tmp_path):
    payload = bomb(1 << 30)
    assert len(payload) < 1.1e6
    server = Server(tmp_path / "data")
    try:
        before = peak_rss(server.proc.pid)
        body, kind = multipart("bomb.json.gz", payload)
        started = time.perf_counter()
        status, _ = raw_post(server.port, body, kind)
        took = time.perf_counter() - started
        growth = peak_rss(server.proc.pid) - before
        print(f"gzip bomb: {status} in {took:.2f} s, peak RSS growth {growth / 2**20:.1f} MiB")
        assert status == 413
        assert growth < 100 * 2**20
        assert server.get("/api/traces") == []
        data = tmp_path / "data"
        assert list((data / "blobs").iterdir()) == [] and list((data / "tmp").iterdir()) == []
    finally:
        server.stop()


def test_gzip_is_stored_inflated_and_its_ratio_is_capped(tmp_path):
    text = json.dumps(ROWS).encode()
    settings = make_settings(tmp_path, max_upload_ratio=50.0)
    with TestClient(create_app(settings), headers={**ORIGIN, **UPLOADS}) as c:
        two_members = gzip.compress(text[:100]) + gzip.compress(text[100:])
        r = c.post("/api/traces", files={"file": ("t.json.gz", two_members)})
        assert r.status_code == 201, r.text
        assert r.json()["num_requests"] == 40 and r.json()["size"] == len(text)
        stored = tmp_path / "data" / "blobs" / r.json()["trace_id"]
        assert stored.read_bytes() == text
        padded = json.dumps(ROWS + [{"id": "x", "note": " " * 5_000_000}]).encode()
        r = c.post("/api/traces", files={"file": ("pad.json.gz", gzip.compress(padded))})
        assert r.status_code == 413 and "50x" in r.json()["detail"]["message"]
        r = c.post("/api/traces", files={"file": ("bad.gz", gzip.compress(text)[:-30])})
        assert r.status_code == 400
        assert len(c.get("/api/traces").json()) == 1


def raw_post(port: int, body: bytes, kind: str, declared: int | None = None,
             chunked: bool = False) -> tuple[int, bytes]:
    """POST /api/traces over a raw socket; sends until the server answers or hangs up.
    Returns the status and everything read until the server closed."""
    length = "Transfer-Encoding: chunked" if chunked else \
        f"Content-Length: {declared if declared is not None else len(body)}"
    head = (f"POST /api/traces HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: {kind}\r\n"
            f"{length}\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(head)
        s.settimeout(0.0)
        answer = b""
        for k in range(0, len(body), 65536):
            piece = body[k:k + 65536]
            if chunked:
                piece = f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
            try:
                s.sendall(piece)
                answer += s.recv(65536)
                if answer:
                    break
            except BlockingIOError:
                continue
            except OSError:  # the server hung up while we were still sending
                break
        s.settimeout(60)
        while True:  # to the server's close (a timeout if it kept the connection)
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            answer += chunk
    return int(answer.split(b" ", 2)[1]), answer


def test_a_413_closes_the_connection_instead_of_reading_the_rest(tmp_path):
    server = Server(tmp_path / "data", SERVESCOPE_MAX_UPLOAD_BYTES="100000")
    try:
        body, kind = multipart("big.json", b"[" + b" " * 2_000_000)
        status, answer = raw_post(server.port, body[:300_000], kind, declared=1 << 30)
        assert status == 413 and b"connection: close" in answer.lower()
        status, answer = raw_post(server.port, body, kind, chunked=True)  # no length declared
        assert status == 413 and b"connection: close" in answer.lower()
        assert server.get("/api/traces") == []
    finally:
        server.stop()
