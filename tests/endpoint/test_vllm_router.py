"""vllm-router (PyPI, the real Rust router) in front of `servescope serve --openai --replicas N`:
a short run sent through the router lands on every replica, and each replica's own /metrics
counts what it served, as a vLLM behind that router would (issue #37's done-when)."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.real_clients import Endpoint, Router, scrape, total

CONFIG = {"model": "Qwen/Qwen3-8B", "gpu": "H100"}  # a catalog model and GPU; any would do
NUM_REPLICAS = 3
NUM_REQUESTS = 12  # a multiple of NUM_REPLICAS: round robin gives each the same share
MAX_TOKENS = 4


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[tuple[Endpoint, Router]]:
    endpoint = Endpoint(tmp_path, CONFIG, replicas=NUM_REPLICAS)
    try:
        router = Router(tmp_path / "router.log", endpoint.replica_urls, "round_robin")
        try:
            yield endpoint, router
        finally:
            router.stop()
    finally:
        endpoint.stop()


def complete(url: str, model: str, i: int) -> dict[str, Any]:
    body = {"model": model, "prompt": f"request {i} " + "hello " * (8 + i), "max_tokens":
            MAX_TOKENS, "ignore_eos": True}
    response = httpx.post(url + "/v1/completions", json=body, timeout=60)
    assert response.status_code == 200, response.text
    return dict(response.json())


def test_round_robin_spreads_the_run_and_each_replica_counts_its_share(
        fleet: tuple[Endpoint, Router]) -> None:
    endpoint, router = fleet
    model = endpoint.model()
    with ThreadPoolExecutor(max_workers=4) as pool:  # a few in flight at once, as a client
        answers = list(pool.map(lambda i: complete(router.url, model, i), range(NUM_REQUESTS)))
    assert all(a["usage"]["completion_tokens"] == MAX_TOKENS for a in answers)

    per_replica = [scrape(url + "/metrics") for url in endpoint.replica_urls]
    served = [total(m, "vllm:request_success_total") for m in per_replica]
    # round robin over N workers gives each NUM_REQUESTS / N, whatever order they arrive in
    assert served == [NUM_REQUESTS / NUM_REPLICAS] * NUM_REPLICAS
    # the server's own port answers a fleet-wide /metrics: each replica's series by its label
    fleet_wide = scrape(endpoint.url + "/metrics")
    assert [total(fleet_wide, "vllm:request_success_total", replica=str(k))
            for k in range(NUM_REPLICAS)] == served
    # the router's own count of what it sent each worker is what that replica says it served
    routed = router.metrics()
    for url, count in zip(endpoint.replica_urls, served, strict=True):
        assert total(routed, "vllm_router_processed_requests_total", worker=url) == count
    # the tokens the replicas counted are the tokens the run was answered with
    assert sum(total(m, "vllm:prompt_tokens_total") for m in per_replica) == sum(
        a["usage"]["prompt_tokens"] for a in answers)
    assert sum(total(m, "vllm:generation_tokens_total") for m in per_replica) == (
        NUM_REQUESTS * MAX_TOKENS)
