"""A `servescope serve` process for a bench: on a free loopback port, from a checkout, waited
for until it answers /healthz (bench/classroom.py and bench/stream.py)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
START_S = 60.0  # a bound only against a server that never comes up


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(data_dir: str, port: int, tree: Path = ROOT) -> subprocess.Popen[bytes]:
    """`servescope serve` from `tree` (its backend/ on the path) with its data in `data_dir`."""
    env = {**os.environ, "SERVESCOPE_DATA_DIR": data_dir, "PYTHONPATH": str(tree / "backend")}
    proc = subprocess.Popen([sys.executable, "-m", "servescope.cli", "serve", "--port", str(port),
                             "--log-level", "warning"], cwd=tree, env=env)
    return wait_until_up(proc, f"http://127.0.0.1:{port}/healthz")


def wait_until_up(proc: subprocess.Popen[bytes], url: str) -> subprocess.Popen[bytes]:
    """`proc` once `url` answers; it is killed and the bench stops if it exits or takes longer
    than START_S."""
    deadline = time.monotonic() + START_S
    while True:
        try:
            urllib.request.urlopen(url, timeout=1).close()
            return proc
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise SystemExit("server did not start") from None
            time.sleep(0.1)
