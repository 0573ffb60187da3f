"""A viewer that stops reading, on a real server over a real socket: it is dropped once a send
waits past send_timeout_s, or sooner when the bytes buffered for all viewers pass
max_buffered_bytes; the driver of the same session plays on."""

from __future__ import annotations

import base64
import json
import os
import socket
import time
import urllib.request

import pytest
from support.server import Server
from websockets.sync.client import connect

NUM_REQUESTS = 30_000  # the init message lists them: about 2 MB, more than the socket absorbs


def stalled_follower(server: Server, sid: str) -> socket.socket:
    """A follower that completes the handshake and never reads again (a tiny receive window)."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", server.port))
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET /ws/sessions/{sid}?follow=1 HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
               "Upgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(1)
    assert head.startswith(b"HTTP/1.1 101"), head
    return s


def viewers(server: Server, sid: str) -> int:
    return int(server.get(f"/api/sessions/{sid}")["num_viewers"])


def session(server: Server) -> dict:
    rows = [{"id": f"r{i}", "prompt_len": 8, "output_len": 1, "arrival_s": i * 1e-3}
            for i in range(NUM_REQUESTS)]
    body = json.dumps({"config": {"num_gpu_blocks": 256}, "workload": {"requests": rows}})
    request = urllib.request.Request(server.url + "/api/sessions", body.encode(),
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as r:
        return json.loads(r.read())


def dropped_while_driving(server: Server) -> None:
    """Join a stalled follower, drive the session until the server drops it (waiting for that,
    not for a time): its connection is aborted, the driver stays."""
    made = session(server)
    sid = made["session_id"]
    with connect(f"{server.ws_url}{made['ws_path']}", origin=server.url,
                 max_size=None, close_timeout=1) as driver:  # its backlog is not read
        stalled = stalled_follower(server, sid)
        try:
            while viewers(server, sid) < 2:
                time.sleep(0.01)
            n, give_up = 0, time.monotonic() + 300  # a bound only against hanging when broken
            while viewers(server, sid) == 2:  # each seek sends both viewers a keyframe
                assert time.monotonic() < give_up, "the stalled viewer was never dropped"
                driver.send(json.dumps({"type": "seek", "v": 1, "iter": n % 50}))
                n += 1
                time.sleep(0.002)
            assert viewers(server, sid) == 1  # the driver stays
        finally:
            stalled.close()


@pytest.mark.parametrize("env", [
    {"SERVESCOPE_SEND_TIMEOUT_S": "0.5"},  # dropped by its send timeout
    {"SERVESCOPE_SEND_TIMEOUT_S": "3600", "SERVESCOPE_MAX_BUFFERED_BYTES": "50000"},  # the cap
], ids=["send_timeout", "buffer_cap"])
def test_a_viewer_that_stops_reading_is_dropped_and_the_driver_plays_on(tmp_path, env):
    server = Server(tmp_path / "data", **env)
    try:
        dropped_while_driving(server)
    finally:
        server.stop()
