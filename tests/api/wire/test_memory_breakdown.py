"""init.engines[k].memory_breakdown: the KV sizing the server used for a priced engine, checked
against the published geometry and datasheet figures (not the cost model's own code); a config
that does not fit is refused by field while the session keeps its run."""

from __future__ import annotations

import json
import math

from support.server import receive, receive_until

from servescope.api.wire.compact import expand

GIB = 2**30
LLAMA_8B = "meta-llama/Llama-3.1-8B-Instruct"
LLAMA_70B = "meta-llama/Llama-3.3-70B-Instruct"
# Llama 3.1 8B config.json: 32 layers, 8 KV heads of 128, hidden 4096, intermediate 14336;
# 8.03B parameters in BF16. H100 SXM: 79.22 GiB visible to vLLM (its total_gpu_memory log).
KV_BYTES_8B = 2 * 32 * 8 * 128 * 2
WEIGHTS_8B_GIB = 8.03e9 * 2 / GIB
H100_VISIBLE_GIB = 79.22
DEMO_BUDGET = 512  # the demo preset's max_num_batched_tokens


def configure(ws, config):
    ws.send_text(json.dumps({"type": "configure", "v": 1, "config": config,
                             "workload": {"preset": "demo"}}))
    return receive_until(ws, "status")


def test_a_model_on_a_gpu_sends_the_sizing_its_pool_came_from(client):
    with client.websocket_connect("/ws/sessions/new") as ws:
        placeholder = configure(ws, {})[0]
        assert placeholder["engines"][0]["memory_breakdown"] is None  # no model: nothing sized
        init, keyframe = configure(ws, {"model": LLAMA_8B, "gpu": "H100",
                                        "num_gpu_blocks": None})[:2]
    engine = init["engines"][0]
    b = engine["memory_breakdown"]
    assert b["total_gib"] == H100_VISIBLE_GIB
    assert math.isclose(b["budget_gib"], 0.9 * H100_VISIBLE_GIB)
    assert math.isclose(b["weights_gib"], WEIGHTS_8B_GIB, rel_tol=0.01)
    # docs/cost-model.md: the profile run's peak is tokens * (4 I + 6 H) * 2 bytes
    assert math.isclose(b["activation_gib"], DEMO_BUDGET * (4 * 14336 + 6 * 4096) * 2 / GIB)
    assert math.isclose(b["budget_gib"], b["weights_gib"] + b["non_torch_gib"]
                        + b["activation_gib"] + b["kv_cache_gib"])
    assert b["kv_bytes_per_token"] == KV_BYTES_8B and b["block_bytes"] == 16 * KV_BYTES_8B
    blocks = math.floor(b["kv_cache_gib"] * GIB / b["block_bytes"])
    assert b["num_gpu_blocks"] == blocks == engine["num_gpu_blocks"] == init["num_gpu_blocks"]
    assert b["kv_capacity_tokens"] == 16 * blocks
    assert len(expand(keyframe["block_owner"])) == blocks  # the pool the viewers get is that size
    assert 20_000 < blocks < 40_000  # ~56 GiB of KV at 2 MiB a block


def test_a_given_num_gpu_blocks_sizes_the_pool_and_the_breakdown_still_says_what_fits(client):
    r = client.post("/api/sessions", json={"config": {"model": LLAMA_8B, "gpu": "H100"},
                                           "workload": {"preset": "demo"}})
    assert r.status_code == 201, r.text
    engine = r.json()["engines"][0]
    assert engine["num_gpu_blocks"] == 513  # the demo preset's own
    assert engine["memory_breakdown"]["num_gpu_blocks"] > 20_000


def test_a_model_that_does_not_fit_is_refused_by_field_and_the_session_goes_on(client):
    with client.websocket_connect("/ws/sessions/new") as ws:
        init = configure(ws, {"model": LLAMA_8B, "gpu": "H100", "num_gpu_blocks": None})[0]
        blocks = init["num_gpu_blocks"]
        # 70.6B parameters in BF16 are 131 GiB: over one H100's 71.3 GiB budget
        ws.send_text(json.dumps({"type": "configure", "v": 1, "config": {
            "model": LLAMA_70B, "gpu": "H100", "num_gpu_blocks": None}}))
        err = receive(ws)
        assert err["type"] == "error" and err["code"] == "config" and err["field"] == "model"
        assert "does not fit" in err["message"] and "H100" in err["message"], err
        # on two H100s the weights fit, but one 131072-token request's KV does not
        ws.send_text(json.dumps({"type": "configure", "v": 1, "config": {
            "model": LLAMA_70B, "gpu": "H100", "tensor_parallel_size": 2,
            "num_gpu_blocks": None}}))
        err = receive(ws)
        assert err["code"] == "config" and err["field"] == "max_model_len", err
        ws.send_text(json.dumps({"type": "step", "v": 1, "n": 2}))
        steps = [m for m in receive_until(ws, "status") if m["type"] == "step"]
    assert sum(len(m["records"]) for m in steps) == 2
    assert steps[0]["records"][0]["nu"] == blocks - 1  # still the 8B run's pool


def test_the_session_says_what_of_a_run_is_not_modelled(client):
    with client.websocket_connect("/ws/sessions/new") as ws:
        llama = configure(ws, {"model": LLAMA_8B, "gpu": "H100", "num_gpu_blocks": None})[0]
        gemma = configure(ws, {"model": "google/gemma-2-9b-it", "gpu": "H100",
                               "num_gpu_blocks": None, "data_parallel_size": 2})[0]
    assert llama["engines"][0]["not_modelled"] == []
    notes = gemma["engines"][0]["not_modelled"]
    assert any("sliding-window" in n for n in notes)
    assert any(n.startswith("data_parallel_size 2") for n in notes)


def test_init_says_where_a_speculating_engines_acceptances_come_from(client):
    """init.engines[k].acceptance_source: none without speculation, else the engine's own
    words (the acceptance model for a preset's requests, which carry no spec_accepted)."""
    with client.websocket_connect("/ws/sessions/new") as ws:
        plain = configure(ws, {})[0]
        spec = configure(ws, {"speculative_config": {"method": "ngram",
                                                     "num_speculative_tokens": 3}})[0]
    assert plain["engines"][0]["acceptance_source"] == "none"
    assert spec["engines"][0]["acceptance_source"].startswith("model: ngram")
