"""--replicas 2 --base-port P: replica k answers on P + k with its own /metrics (no replica
label, as its vLLM's); the explorer's port serves the fleet-wide /metrics (a `replica` label)
and, with --router, the API routed over the replicas."""

from __future__ import annotations

import json
import socket
import urllib.request
from pathlib import Path

from support.endpoint import start
from support.server import Server, free_port


def two_free_ports() -> int:
    for _ in range(50):
        port = free_port()
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
        return port
    raise AssertionError("no two free ports in a row")


def complete(url: str, max_tokens: int) -> dict:
    request = urllib.request.Request(url + "/v1/completions", data=json.dumps(
        {"prompt": [1, 2, 3], "max_tokens": max_tokens, "ignore_eos": True}).encode(),
        headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as r:
        return json.loads(r.read())


def generated(text: str) -> dict[str, float]:
    """vllm:generation_tokens_total samples, by their labels."""
    return {line.split("{", 1)[1].rsplit("}", 1)[0]: float(line.rsplit(" ", 1)[1])
            for line in text.splitlines() if line.startswith("vllm:generation_tokens_total{")}


def test_each_replica_serves_and_counts_its_own(tmp_path: Path) -> None:
    base = two_free_ports()
    server: Server = start(tmp_path, "--replicas", "2", "--base-port", str(base),
                           "--router", "round-robin")
    try:
        replicas = [f"http://127.0.0.1:{base + k}" for k in range(2)]
        complete(replicas[0], 3)
        complete(replicas[1], 5)
        for url, count in zip(replicas, (3, 5), strict=True):
            with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
                own = generated(r.read().decode())
            assert list(own.values()) == [count] and "replica" not in next(iter(own))
        complete(server.url, 7)  # round-robin's first pick: replica 0
        with urllib.request.urlopen(server.url + "/metrics", timeout=10) as r:
            fleet = generated(r.read().decode())
        assert sorted(fleet.values()) == [5, 10]
        assert all('replica="' in labels for labels in fleet)
    finally:
        server.stop()
