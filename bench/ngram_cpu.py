"""The n-gram drafter's CPU time per request, the constant core/drafter_cost.py prices `ngram`
with: vLLM's own proposer function (`_find_longest_matched_ngram_and_propose_tokens` in
vllm/v1/spec_decode/ngram_proposer.py, numba-compiled) timed on random token contexts of a
few lengths. Run with vLLM's interpreter: /work/vllm-venv/bin/python bench/ngram_cpu.py."""

from __future__ import annotations

import time

import numpy as np
from vllm.v1.spec_decode.ngram_proposer import (
    _find_longest_matched_ngram_and_propose_tokens as propose,
)

LENGTHS = (256, 1024, 4096)
REPEATS = 2000
K = 3
LOOKUP_MIN, LOOKUP_MAX = 2, 5  # vLLM's defaults when only one of the two is given


def per_call_us(context: np.ndarray) -> float:
    propose(context, LOOKUP_MIN, LOOKUP_MAX, 1 << 20, K)  # compile once
    start = time.perf_counter()
    for _ in range(REPEATS):
        propose(context, LOOKUP_MIN, LOOKUP_MAX, 1 << 20, K)
    return (time.perf_counter() - start) / REPEATS * 1e6


def main() -> None:
    rng = np.random.default_rng(0)
    for length in LENGTHS:
        context = rng.integers(0, 32000, length).astype(np.int32)
        us = per_call_us(context)
        print(f"context {length:5d}: {us:7.2f} us a call, {us * 1e3 / length:6.2f} ns a token")


if __name__ == "__main__":
    main()
