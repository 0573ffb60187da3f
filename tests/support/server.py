"""Server test helpers shared by tests/api and tests/e2e: a hand-driven pacing clock, settings on a
temporary data directory, a validator for every server message, and a real `servescope serve`
process. Fixtures that use them live in each folder's conftest.py."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from servescope.api.settings import Settings
from servescope.api.wire import protocol as P

ROOT = Path(__file__).resolve().parents[2]
# the upload token the tests' client presents (api/uploads/owner.py): its uploads are its own
UPLOAD_TOKEN = "servescope-test-client-1"
UPLOADS = {"X-Upload-Token": UPLOAD_TOKEN}


class FakeClock:
    """The pacing clock, moved by the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


ORIGIN = {"origin": "http://testserver"}  # what a page served by TestClient's host sends


def make_settings(tmp: Path, **overrides: Any) -> Settings:
    # one client (the shared test token) makes every upload here: the hourly share is the
    # hostile tests' to check (tests/hostile), not every upload test's
    base: dict[str, Any] = {"data_dir": tmp / "data", "keyframe_interval": 16,
                            "catch_up_records": 32, "server_names": ("testserver",),
                            "client_max_uploads_per_hour": 100_000}
    base.update(overrides)
    return Settings(**base)


def validate(msg: dict[str, Any]) -> dict[str, Any]:
    """Validate one server message against the protocol models; return it."""
    P.SERVER.validate_python(msg)
    return msg


def receive(ws: Any) -> dict[str, Any]:
    """The next message other than `progress` (validated too), which the background simulation
    sends whenever it stores a batch, interleaved with the replies a test waits for."""
    while True:
        msg = validate(json.loads(ws.receive_text()))
        if msg["type"] != "progress":
            return msg


def receive_until(ws: Any, kind: str, limit: int = 200) -> list[dict[str, Any]]:
    """Messages up to and including the first of type `kind`."""
    out = []
    for _ in range(limit):
        out.append(receive(ws))
        if out[-1]["type"] == kind:
            return out
    raise AssertionError(f"no {kind} message in {limit}")


def request_list(get: Any, session_id: str, engine: int = 0, limit: int = 10_000) -> list[Any]:
    """A session's whole request list, read page by page as the page reads it (`get(path)`
    answers the route's JSON: TestClient's or a real server's)."""
    out: list[Any] = []
    while True:
        page = get(f"/api/sessions/{session_id}/requests?engine={engine}&offset={len(out)}"
                   f"&limit={limit}")
        assert page["offset"] == len(out)
        out += page["requests"]
        if len(out) >= page["total"] or not page["requests"]:
            return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """A real `servescope serve` process on a free port, given `args` (`--classroom`, say) and
    reached at `address` (loopback: 127.0.0.1, or another 127.0.0.0/8 address)."""

    def __init__(self, data_dir: Path, *args: str, address: str = "127.0.0.1",
                 **env: str) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.url = f"http://{address}:{self.port}"
        self.ws_url = f"ws://{address}:{self.port}"
        environ = {**os.environ, "SERVESCOPE_DATA_DIR": str(data_dir), **env}
        # its output to a file: a pipe nobody reads would block a chatty server when full
        self.log = data_dir.with_name(f"{data_dir.name}-server.log")
        self.out = data_dir.with_name(f"{data_dir.name}-server.out")  # what it printed
        with self.log.open("wb") as log, self.out.open("wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "servescope.cli", "serve", "--port", str(self.port),
                 "--log-level", "warning", *args], cwd=ROOT, env=environ,
                stdout=out, stderr=log)
        self._wait()

    def _wait(self) -> None:
        deadline = time.monotonic() + 120  # a bound only against hanging when broken
        while True:
            try:
                urllib.request.urlopen(self.url + "/healthz", timeout=1).close()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("server did not start: " + self.stderr()) from None
                time.sleep(0.1)

    def get(self, path: str, headers: dict[str, str] | None = None) -> Any:
        """GET as the tests' client (its upload token), or with `headers`."""
        request = urllib.request.Request(self.url + path, headers=UPLOADS if headers is None
                                         else headers)
        with urllib.request.urlopen(request, timeout=10) as r:
            return json.loads(r.read())

    def printed(self, prefix: str) -> str:
        """The rest of the first line the server printed that starts with `prefix`."""
        for line in self.out.read_text().splitlines():
            if line.startswith(prefix):
                return line[len(prefix):]
        raise AssertionError(f"the server printed no line starting {prefix!r}")

    def stderr(self) -> str:
        """The end of what the server wrote (warnings, errors and their tracebacks)."""
        return self.log.read_bytes()[-4000:].decode(errors="replace")

    def died(self) -> str:
        """Why a request found nobody listening: the server's exit status and last words."""
        return f"the server exited with {self.proc.poll()}: {self.stderr()}"

    def stop(self, kill: bool = False) -> None:
        if self.proc.poll() is None:
            self.proc.kill() if kill else self.proc.terminate()
            self.proc.wait(timeout=10)
