"""The two workloads of the simulator speed bench, as plain request lists (shared with the
vLLM driver, which replays them through vLLM's own scheduler)."""

from __future__ import annotations

import numpy as np

POISSON = {"block_size": 16, "num_gpu_blocks": 8192, "max_num_batched_tokens": 2048,
           "max_num_seqs": 64, "enable_chunked_prefill": True, "long_prefill_token_threshold": 0,
           "enable_prefix_caching": False}


def poisson_requests(seed: int = 0) -> list[dict[str, int | str]]:
    """200 Poisson arrivals at 0.25 per step, prompts U[500,1500], outputs U[100,300]."""
    rng = np.random.default_rng(seed)
    steps = np.floor(np.cumsum(rng.exponential(4.0, 200))).astype(int)
    prompts = rng.integers(500, 1501, 200)
    outputs = rng.integers(100, 301, 200)
    return [{"id": f"p{i}", "arrival_step": int(s), "prompt_len": int(p), "output_len": int(o)}
            for i, (s, p, o) in enumerate(zip(steps, prompts, outputs, strict=True))]


def decode_config(num_running: int) -> dict[str, int | bool]:
    return {**POISSON, "max_num_seqs": num_running,
            "max_num_batched_tokens": max(2048, num_running),
            "num_gpu_blocks": num_running * 40 + 1}


def decode_requests(num_running: int, num_steps: int) -> list[dict[str, int | str]]:
    """`num_running` requests that all stay in decode for `num_steps` steps after prefill."""
    return [{"id": f"d{i}", "arrival_step": 0, "prompt_len": 32, "output_len": num_steps + 2}
            for i in range(num_running)]
