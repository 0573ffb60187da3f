"""Bodies, pools and grids bounded before they are read or built (issue 33, parts 1 and 2),
against a real server on 127.0.0.1: a form body to a JSON route, a pool a model_config sizes,
a grid of half a million values; each 4xx quickly with bounded memory growth."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from support.hostile_bounds import MB, Watched, stream_post

pytestmark = pytest.mark.hostile

# Llama-3.1-8B's Hugging Face config.json, without a model name: on 8 B200s with block_size 1
# the cost model sizes ~10 million blocks, ten times the default max_gpu_blocks.
LLAMA_8B = {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096,
            "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
            "head_dim": 128, "intermediate_size": 14336, "vocab_size": 128256,
            "max_position_embeddings": 131072, "torch_dtype": "bfloat16",
            "hidden_act": "silu", "tie_word_embeddings": False}


@pytest.fixture(scope="module")
def watched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Watched]:
    server = Watched(tmp_path_factory.mktemp("bodies") / "data")
    assert post_json(server, "/api/sessions", {"workload": {"preset": "demo"}})[0] == 201
    yield server
    server.stop()


def post_json(watched: Watched, path: str, body: object) -> tuple[int, dict, float]:
    request = urllib.request.Request(watched.server.url + path, json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    start = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=120) as r:
            return r.status, json.loads(r.read()), time.monotonic() - start
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read()), time.monotonic() - start


@pytest.mark.parametrize("kind", ["application/x-www-form-urlencoded",
                                  "multipart/form-data; boundary=x"])
def test_a_256_mib_form_body_to_a_json_route_is_415_unread(watched: Watched, kind: str) -> None:
    watched.rebase()
    size = 256 * MB
    chunk = b"a=" + b"b" * (MB - 2)
    answer = stream_post(watched.port, "/api/sessions", kind, size, (chunk for _ in range(256)))
    assert answer.status == 415, answer.body[:300]
    assert answer.json()["detail"]["field"] == "content-type"
    assert answer.seconds < 5 and watched.growth_mb() < 200
    assert watched.healthy()


def test_a_json_body_declared_over_the_limit_is_413_unread(watched: Watched) -> None:
    watched.rebase()
    answer = stream_post(watched.port, "/api/sessions", "application/json", 256 * MB,
                         (b" " * MB for _ in range(256)))
    assert answer.status == 413, answer.body[:300]
    assert answer.seconds < 5 and watched.growth_mb() < 200


def test_a_pool_a_model_config_sizes_is_capped_before_it_is_built(watched: Watched) -> None:
    watched.rebase()
    config = {"model_config": LLAMA_8B, "gpu": "B200", "tensor_parallel_size": 8,
              "block_size": 1, "num_gpu_blocks": None}  # None: sized by the cost model
    status, body, seconds = post_json(watched, "/api/sessions",
                                      {"config": config, "workload": {"preset": "demo"}})
    assert status == 400 and body["detail"]["field"] == "num_gpu_blocks", body
    assert "max_gpu_blocks" in body["detail"]["message"]
    assert seconds < 5 and watched.growth_mb() < 100


def test_a_grid_of_half_a_million_values_is_refused_before_any_is_checked(
        watched: Watched) -> None:
    watched.rebase()
    grid = {"max_num_seqs": list(range(1, 500_001))}
    status, body, seconds = post_json(watched, "/api/sweeps", {
        "workload": {"preset": "demo"}, "config": {"model": "meta-llama/Llama-3.1-8B-Instruct",
                                                   "gpu": "H100"}, "grid": grid})
    assert status == 400 and body["detail"]["field"] == "max_num_seqs", body
    assert "500,000 values" in body["detail"]["message"]
    assert seconds < 5
