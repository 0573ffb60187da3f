"""Regenerates ServeScope's own reference recordings: seeded workloads run through vLLM 0.33's
real V1 scheduler on a CPU with servescope.capture.RecordingScheduler (fake one-token outputs),
and the async_* ones through its AsyncScheduler with RecordingAsyncScheduler, driven as the
engine core's batch queue drives it (step N + 1 scheduled before step N's update).

    /path/to/python-with-vllm traces/recordings/generate.py [NAME ...]

Decisions, block ids and cache events are deterministic; time_s and step_time_ms are the wall
time of vLLM's own scheduler calls on the recording machine (no model runs), so they differ.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "backend"))

SEED = 20250
BASE = {"block_size": 16, "num_gpu_blocks": 10000, "max_num_seqs": 64,
        "max_num_batched_tokens": 2048, "enable_chunked_prefill": True,
        "long_prefill_token_threshold": 0, "enable_prefix_caching": False}


def _poisson(rng: np.random.Generator, n: int, per_step: float) -> list[int]:
    return [int(s) for s in np.floor(np.cumsum(rng.exponential(1.0 / per_step, n)))]


def _rows(prefix: str, steps: list[int], prompts: Any, outputs: Any) -> list[dict[str, Any]]:
    return [{"id": f"{prefix}{i}", "arrival_step": s, "prompt_len": int(p), "output_len": int(o)}
            for i, (s, p, o) in enumerate(zip(steps, prompts, outputs, strict=True))]


def ample_kv(rng: np.random.Generator) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """12 requests, plenty of KV: chunked prefill and continuous batching only."""
    n = 12
    return BASE, _rows("a", _poisson(rng, n, 0.3), rng.integers(100, 900, n),
                       rng.integers(10, 80, n))


def preemption_heavy(rng: np.random.Generator) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """20 short prompts with long outputs in 64 blocks: decodes outgrow the cache, so running
    requests are preempted from the tail again and again and resume by recompute."""
    n = 20
    config = {**BASE, "num_gpu_blocks": 64}
    return config, _rows("t", _poisson(rng, n, 2.0), rng.integers(20, 80, n),
                         rng.integers(100, 200, n))


def _long_prefill(rng: np.random.Generator) -> list[dict[str, Any]]:
    decoders = _rows("d", [0] * 12, rng.integers(50, 200, 12), rng.integers(60, 120, 12))
    return [*decoders, {"id": "long", "arrival_step": 5, "prompt_len": 4000, "output_len": 20}]


def long_prefill_chunked(rng: np.random.Generator) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A 4000-token prompt joins 12 decoders under a 512-token budget."""
    return {**BASE, "max_num_batched_tokens": 512}, _long_prefill(rng)


def long_prefill_lpt256(rng: np.random.Generator) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The same workload with long_prefill_token_threshold 256."""
    config = {**BASE, "max_num_batched_tokens": 512, "long_prefill_token_threshold": 256}
    return config, _long_prefill(rng)


def prefix_sysprompt(rng: np.random.Generator) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """30 requests sharing a 512-token system prompt, two families of follow-ups sharing more,
    in 400 blocks so cached blocks are evicted (LRU) and hit again."""
    n = 30
    rows = _rows("s", _poisson(rng, n, 0.5), rng.integers(560, 1100, n),
                 rng.integers(10, 60, n))
    for i, row in enumerate(rows):
        row["prefix"] = [["system", 512]]
        if i % 3 == 1:
            row["prefix"].append(["family-a", 40])  # shares 2 more full blocks with its family
        elif i % 3 == 2 and i > 10:
            row["prefix"].append(["family-b", 100])
    return {**BASE, "num_gpu_blocks": 400, "enable_prefix_caching": True}, rows


def priority_preemption(rng: np.random.Generator
                        ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """14 requests with priorities 0-2 in 48 blocks under the priority policy: victims are the
    lowest-priority running requests, often the very request being scheduled."""
    n = 14
    rows = _rows("q", _poisson(rng, n, 2.0), rng.integers(20, 80, n), rng.integers(100, 200, n))
    for i, row in enumerate(rows):
        row["priority"] = (i * 7) % 3
    config = {**BASE, "num_gpu_blocks": 48, "max_num_batched_tokens": 512,
              "scheduling_policy": "priority"}
    return config, rows


def tight_kv(rng: np.random.Generator) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """16 requests in 100 blocks: admissions wait for blocks, a few preemptions."""
    n = 16
    config = {**BASE, "num_gpu_blocks": 100}
    return config, _rows("k", _poisson(rng, n, 1.0), rng.integers(100, 500, n),
                         rng.integers(20, 90, n))


def block32(rng: np.random.Generator) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Block size 32 with prefix caching in 90 blocks: 20 requests sharing a 300-token prompt
    (not block-aligned), partial-block hits, evictions and preemptions."""
    n = 20
    rows = _rows("b", _poisson(rng, n, 1.0), rng.integers(320, 900, n), rng.integers(10, 70, n))
    for row in rows:
        row["prefix"] = [["system", 300]]
    config = {**BASE, "block_size": 32, "num_gpu_blocks": 90, "enable_prefix_caching": True,
              "max_num_batched_tokens": 1024}
    return config, rows


def last_token_in_flight(rng: np.random.Generator
                         ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """20 short-output requests in 29 blocks. Under async scheduling one is preempted while the
    step sampling its last token runs: that token still arrives (stale output) and the request
    finishes from the waiting queue without being resumed."""
    n = 20
    config = {**BASE, "num_gpu_blocks": 29}
    return config, _rows("f", _poisson(rng, n, 2.0), rng.integers(20, 200, n),
                         rng.integers(2, 30, n))


# speculative decoding (issue #34): ngram (no draft weights), K = 3, each request with an
# explicit spec_accepted list (0..K at each verify step)
NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4,
         "prompt_lookup_min": 2}


# EAGLE-3 without weights: the driver points the draft at its tiny local model config; the
# scheduler reads only num_lookahead_tokens (K lookahead slots a request, allocate_slots)
EAGLE3 = {"method": "eagle3", "num_speculative_tokens": 3}


def _speculative(rng: np.random.Generator, config: dict[str, Any], rows: list[dict[str, Any]],
                 spec: dict[str, Any] = NGRAM) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    k = spec["num_speculative_tokens"]
    for row in rows:
        row["spec_accepted"] = [int(a) for a in rng.integers(0, k + 1, row["output_len"])]
    return {**config, "speculative_config": spec}, rows


def spec_ample_kv(rng: np.random.Generator) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """10 requests, plenty of KV: every decode takes 1 + 3 tokens, a prefix of them kept."""
    n = 10
    return _speculative(rng, BASE, _rows("a", _poisson(rng, n, 0.5), rng.integers(50, 400, n),
                                         rng.integers(10, 60, n)))


def spec_tight_kv(rng: np.random.Generator) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """16 requests in 60 blocks: drafts outgrow the cache, preemptions with drafts held."""
    n = 16
    return _speculative(rng, {**BASE, "num_gpu_blocks": 60},
                        _rows("t", _poisson(rng, n, 2.0), rng.integers(20, 120, n),
                              rng.integers(40, 120, n)))


def spec_chunked(rng: np.random.Generator) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A 3000-token prompt joins 12 speculating decoders under a 256-token budget, chunk
    threshold 128: drafts and prefill chunks share the budget."""
    rows = _rows("d", [0] * 12, rng.integers(30, 150, 12), rng.integers(30, 90, 12))
    rows.append({"id": "long", "arrival_step": 4, "prompt_len": 3000, "output_len": 20})
    config = {**BASE, "max_num_batched_tokens": 256, "long_prefill_token_threshold": 128}
    return _speculative(rng, config, rows)


def spec_prefix(rng: np.random.Generator) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """20 requests sharing a 256-token prompt in 120 blocks with prefix caching: hits, full
    hits padded with placeholder drafts, evictions."""
    n = 20
    rows = _rows("s", _poisson(rng, n, 1.0), rng.integers(260, 600, n), rng.integers(10, 50, n))
    for i, row in enumerate(rows):
        row["prefix"] = [["system", 256]]
        if i % 4 == 3:  # all but the last token shared: a full hit admits one token, padded
            row["prompt_len"] = 257
    return _speculative(rng, {**BASE, "num_gpu_blocks": 120, "enable_prefix_caching": True},
                        rows)


def spec_loaded(rng: np.random.Generator) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Load: 40 requests within 8 steps, long outputs, ngram K = 5, acceptance mostly low:
    up to 40 decodes of 1 + 5 tokens at once share a 2048-token budget, the late arrivals'
    prefills beside them (issue #34: async scheduling drafts as many as sync under load)."""
    n = 40
    rows = _rows("l", sorted(int(s) for s in rng.integers(0, 8, n)), rng.integers(30, 200, n),
                 rng.integers(120, 220, n))
    spec = {**NGRAM, "num_speculative_tokens": 5}
    config, rows = _speculative(rng, BASE, rows, spec)
    for row in rows:  # mostly 0-2 accepted, as n-gram on chat (few long matches)
        row["spec_accepted"] = [int(a) for a in rng.choice(6, len(row["spec_accepted"]),
                                                           p=[.4, .25, .15, .1, .05, .05])]
    return config, rows


def spec_eagle3_tight_kv(rng: np.random.Generator
                         ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """EAGLE-3, K = 3, 16 requests in 70 blocks: every allocation reserves 3 lookahead slots,
    so blocks run out a few tokens earlier than the scheduled tokens need; preemptions."""
    n = 16
    return _speculative(rng, {**BASE, "num_gpu_blocks": 70},
                        _rows("e", _poisson(rng, n, 2.0), rng.integers(20, 120, n),
                              rng.integers(40, 120, n)), EAGLE3)


def spec_eagle3_prefix(rng: np.random.Generator) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """EAGLE-3, K = 3, prefix caching: each block hash covers the token after the block
    (lookahead hashes). 24 requests in 110 blocks share a 256-token prompt (block-aligned: its
    last block is shared only by requests whose 257th token is shared too) or a 200-token one;
    some prompts are a whole shared prompt plus its next token (the second such is a full hit,
    padded), some block-aligned."""
    n = 24
    rows = _rows("h", _poisson(rng, n, 1.0), rng.integers(260, 500, n), rng.integers(10, 50, n))
    for i, row in enumerate(rows):
        row["prefix"] = [["system", 256]] if i % 2 == 0 else [["tools", 200]]
        if i % 6 == 1:  # the shared prompt plus one token, all shared: the second of each
            key, length = ("system", 257) if i < 12 else ("tools", 201)  # pair is a full hit
            row["prefix"], row["prompt_len"] = [[key, length]], length  # (padded admission)
        elif i % 6 == 3:  # block-aligned prompt: its last block waits for its first output
            row["prompt_len"] = 16 * int(rng.integers(17, 30))
    return _speculative(rng, {**BASE, "num_gpu_blocks": 110, "enable_prefix_caching": True},
                        rows, EAGLE3)


SPEC = (spec_ample_kv, spec_tight_kv, spec_chunked, spec_prefix, spec_loaded,
        spec_eagle3_tight_kv, spec_eagle3_prefix)
WORKLOADS = {f.__name__: f for f in (ample_kv, preemption_heavy, long_prefill_chunked,
                                     long_prefill_lpt256, prefix_sysprompt,
                                     priority_preemption, *SPEC)}
ASYNC_WORKLOADS = {f"async_{f.__name__}": f for f in (tight_kv, preemption_heavy,
                                                      prefix_sysprompt, block32,
                                                      last_token_in_flight, *SPEC)}


def record(name: str) -> Path:
    from servescope import capture
    from servescope.capture.driver import (
        RequestFactory,
        build_scheduler,
        drive,
        drive_pipelined,
        effective_max_model_len,
    )

    asynchronous = name in ASYNC_WORKLOADS
    workload = ASYNC_WORKLOADS[name] if asynchronous else WORKLOADS[name]
    config, requests = workload(np.random.default_rng(SEED))
    path = HERE / f"{name}.jsonl"
    os.environ[capture.PATH_ENV] = str(path)
    cls = capture.RecordingAsyncScheduler if asynchronous else capture.RecordingScheduler
    scheduler = build_scheduler(config, effective_max_model_len(config, requests), cls)
    factory = RequestFactory(scheduler.cache_config.enable_prefix_caching, scheduler.block_size,
                             scheduler.num_hash_lookahead_tokens)
    steps = (drive_pipelined(scheduler, requests, factory) if asynchronous
             else drive(scheduler, requests, factory, observe=False))
    for _ in steps:
        pass
    scheduler.shutdown()
    return path


def main() -> None:
    """Every recording, or the names given (a name ending in * picks those it starts)."""
    names = [*WORKLOADS, *ASYNC_WORKLOADS]
    chosen = [n for arg in sys.argv[1:] for n in names
              if n == arg or (arg.endswith("*") and n.startswith(arg[:-1]))]
    for name in chosen or names:
        path = record(name)
        print(f"{path.name}: {path.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
