"""Issue 33 (5): SIGTERM ends a real `servescope serve` within seconds while a session simulates
ahead, requests wait on its run, abandoned by their clients, and a follower's socket is open."""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import subprocess
import time
import urllib.request

import pytest
from support.server import Server
from websockets.sync.client import connect

pytestmark = pytest.mark.hostile

EXIT_BOUND_S = 10.0  # the bound; the server's own grace is a few seconds (cli/serve.py)


def post_json(server: Server, path: str, body: dict) -> dict:
    request = urllib.request.Request(server.url + path, json.dumps(body).encode(),
                                     {"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as r:
        return json.loads(r.read())


def abandoned_get(server: Server, path: str) -> socket.socket:
    """A GET sent whole whose answer nobody will read (the socket is only kept open)."""
    s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n\r\n".encode())
    return s


def test_sigterm_exits_within_10_s_while_a_20000_request_session_simulates_ahead(tmp_path):
    server = Server(tmp_path / "data")
    try:
        with contextlib.ExitStack() as held:
            made = post_json(server, "/api/sessions", {"workload": {"synthetic": {
                "num_requests": 20_000, "request_rate": 50}}})
            sid = made["session_id"]
            for _ in range(3):
                held.callback(abandoned_get(server, f"/api/sessions/{sid}/summary").close)
            # a follower that reads nothing from here on
            held.enter_context(connect(f"{server.ws_url}/ws/sessions/{sid}?follow=1",
                                       open_timeout=30, close_timeout=1))
            # the run is still being simulated, so the three summaries are waiting on it
            assert not server.get(f"/api/sessions/{sid}")["simulated"][0]["done"]
            start = time.monotonic()
            server.proc.send_signal(signal.SIGTERM)
            try:
                server.proc.wait(timeout=EXIT_BOUND_S)
            except subprocess.TimeoutExpired:
                pytest.fail(f"no exit within {EXIT_BOUND_S} s of SIGTERM: {server.stderr()}")
            assert time.monotonic() - start < EXIT_BOUND_S
    finally:
        server.stop(kill=True)
