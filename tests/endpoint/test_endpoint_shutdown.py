"""SIGTERM (what Ctrl-C's SIGINT does too) with a stream open: the stream ends and the server
exits, well within uvicorn's graceful wait for connections."""

from __future__ import annotations

import http.client
import json
import time
from pathlib import Path

from support.endpoint import start

# a bound against hanging: uvicorn's own wait for open connections is 3 s (api/openai/replicas.py)
EXIT_BOUND_S = 10


def test_sigterm_ends_open_streams_and_exits(tmp_path: Path) -> None:
    server = start(tmp_path)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        conn.request("POST", "/v1/completions", json.dumps(
            {"prompt": "hello", "max_tokens": 4000, "ignore_eos": True, "stream": True}),
            {"Content-Type": "application/json"})
        response = conn.getresponse()
        assert response.readline().startswith(b"data: ")
        server.proc.terminate()
        rest = response.read()  # returns once the server ends the stream
        assert b'"finish_reason":"abort"' in rest
        deadline = time.monotonic() + EXIT_BOUND_S
        while server.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.proc.poll() == 0, server.stderr()
    finally:
        server.stop(kill=True)
