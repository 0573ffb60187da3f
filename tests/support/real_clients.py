"""Real clients against a real `servescope serve --openai` process (issue #37): the endpoint with
its replicas, a vllm-router process in front of them, inference-perf in its own environment
(.venv-perf, made by `make test`), and the Prometheus text each /metrics answers. Every process
listens on 127.0.0.1 and a free port; every wait has a deadline."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from support.endpoint import wait_until
from support.find_python import find
from support.server import ROOT, Server, free_port

PERF_VENV = ROOT / ".venv-perf"  # the Makefile's PERF_VENV
MAKE_TOKENIZER = Path(__file__).with_name("make_tokenizer.py")
START_S = 120.0  # a bound against hanging when broken, not a timing claim


def wait_ready(what: str, ready: Callable[[], bool], alive: Callable[[], bool]) -> None:
    """Wait until `ready` holds; fail at once when `alive` stops holding (a process exited)."""
    wait_until(lambda: ready() or not alive(), f"{what} ready", START_S)
    if not alive():
        raise RuntimeError(f"{what} exited before it was ready")


def answers(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=2).close()
        return True
    except OSError:
        return False


def consecutive_free_ports(n: int) -> int:
    """A base port P with P .. P+n-1 all free on 127.0.0.1 (as --base-port takes them)."""
    for _ in range(100):
        base = free_port()
        if base + n <= 65535 and all(port_free(base + k) for k in range(n)):
            return base
    raise RuntimeError(f"no {n} consecutive free ports")


def port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


class Endpoint:
    """`servescope serve --openai --config CONFIG` (more `args`: --time-scale, --tokenizer) with
    `replicas` replicas on ports base_port + k (None: the API on the server's own port)."""

    def __init__(self, tmp: Path, config: dict[str, Any], *args: str,
                 replicas: int | None = None) -> None:
        config_path = tmp / "endpoint-config.json"
        config_path.write_text(json.dumps(config))
        more = ["--openai", "--config", str(config_path), *args]
        if replicas is not None:
            self.base_port = consecutive_free_ports(replicas)
            more += ["--replicas", str(replicas), "--base-port", str(self.base_port)]
        self.server = Server(tmp / "data", *more)
        self.url = self.server.url
        self.replica_urls = ([f"http://127.0.0.1:{self.base_port + k}" for k in range(replicas)]
                             if replicas is not None else [self.url])
        for url in self.replica_urls:
            wait_ready(f"replica {url}", lambda u=url: answers(u + "/health"), self.alive)

    def alive(self) -> bool:
        return self.server.proc.poll() is None

    def model(self) -> str:
        """The served model name, as GET /v1/models answers it."""
        with urllib.request.urlopen(self.replica_urls[0] + "/v1/models", timeout=10) as r:
            return str(json.loads(r.read())["data"][0]["id"])

    def stop(self) -> None:
        self.server.stop()


class Router:
    """A real vllm-router (PyPI) process over `worker_urls` with `policy`; its own Prometheus
    metrics on a second free port (its default, 29000, would collide between test runs)."""

    def __init__(self, log: Path, worker_urls: list[str], policy: str) -> None:
        binary = Path(sys.executable).with_name("vllm-router")
        if not binary.exists():
            pytest.skip("vllm-router not installed (pyproject's test extras; `make test`)")
        self.port, self.metrics_port = free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        with log.open("wb") as out:
            self.proc = subprocess.Popen(
                [str(binary), "--host", "127.0.0.1", "--port", str(self.port),
                 "--worker-urls", *worker_urls, "--policy", policy,
                 "--prometheus-host", "127.0.0.1", "--prometheus-port", str(self.metrics_port),
                 "--worker-startup-check-interval", "1", "--log-level", "warning"],
                stdout=out, stderr=subprocess.STDOUT)
        wait_ready("vllm-router", lambda: self.ready(len(worker_urls)),
                 lambda: self.proc.poll() is None)

    def ready(self, num_workers: int) -> bool:
        try:
            with urllib.request.urlopen(self.url + "/readiness", timeout=2) as r:
                return bool(json.loads(r.read()).get("healthy_workers") == num_workers)
        except (OSError, ValueError):
            return False

    def metrics(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        return scrape(f"http://127.0.0.1:{self.metrics_port}/metrics")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a Prometheus text page: (name, sorted labels) -> value."""
    with urllib.request.urlopen(url, timeout=10) as r:
        text = r.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def total(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str,
          **labels: str) -> float:
    """The sum of `name`'s samples whose labels include `labels`."""
    return sum(value for (sample, have), value in samples.items()
               if sample == name and set(labels.items()) <= set(have))


def perf_python() -> Path:
    """.venv-perf's Python, or skip saying why it is not there."""
    python = PERF_VENV / "bin" / "python"
    if (PERF_VENV / "bin" / "inference-perf").exists():
        return python
    if find((3, 12), dict(os.environ)) is None:
        pytest.skip("inference-perf needs Python >= 3.12 and none is on this machine "
                    "(tests/support/find_python.py)")
    pytest.skip(f"inference-perf is not installed in {PERF_VENV}: run `make perf-client`")


def make_tokenizer(directory: Path) -> Path:
    """A word-level tokenizer directory (tests/support/make_tokenizer.py), made with
    .venv-perf's tokenizers and transformers."""
    subprocess.run([str(perf_python()), str(MAKE_TOKENIZER), str(directory)], check=True,
                   timeout=300)
    return directory
