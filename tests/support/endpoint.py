"""Shared by tests/endpoint: a real `servescope serve --openai` on a free 127.0.0.1 port, on a
small config priced by the placeholder cost model (10 ms + 0.02 ms a token a step), its clock
run 4x wall time; one sample of its /metrics; waiting for a condition."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from support.server import Server

CONFIG = {"num_gpu_blocks": 512, "block_size": 16, "max_model_len": 4096, "max_num_seqs": 64,
          "max_num_batched_tokens": 1024}
TIME_SCALE = "4"


def start(tmp: Path, *args: str) -> Server:
    config = tmp / "config.json"
    config.write_text(json.dumps(CONFIG))
    return Server(tmp / "data", "--openai", "--config", str(config), "--time-scale", TIME_SCALE,
                  *args)


def metric(server: Server, name: str, **labels: str) -> float:
    """One sample of the server's /metrics."""
    with urllib.request.urlopen(server.url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no {name} {labels} in /metrics")


def wait_until(condition: Callable[[], bool], what: str, limit_s: float = 30.0) -> None:
    deadline = time.monotonic() + limit_s  # a bound against hanging, not a timing check
    while not condition():
        assert time.monotonic() < deadline, f"still not {what}"
        time.sleep(0.05)


