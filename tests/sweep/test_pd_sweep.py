"""P/D against colocated at the same GPU count (sweep/pd.py): on mixed long-prompt/short-chat
traffic, where long prefills stall a colocated fleet's decodes, the best P/D split wins on
p99 ITL, and the answer says so at each load."""

from __future__ import annotations

import numpy as np

from servescope.core.request import RequestSpec
from servescope.sweep.pd import compare, splits

BASE = {"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100", "async_scheduling": False}


def mixed(n: int) -> list[RequestSpec]:
    """Short chats (200 in, 100 out) with a 6000-token document every fifth request."""
    rng = np.random.default_rng(1)
    t, out = 0.0, []
    for i in range(n):
        t += float(rng.exponential(0.08))
        long = i % 5 == 0
        out.append(RequestSpec(f"r{i}", 6000 if long else 200, 16 if long else 100,
                               arrival_s=t))
    return out


def test_the_splits_of_a_gpu_count() -> None:
    got = [(c["prefill"]["replicas"], c["decode"]["replicas"]) for c in splits(BASE, 4, [{}])]
    assert got == [(1, 3), (2, 2), (3, 1)]
    tp2 = splits(BASE, 4, [{"decode": {"tensor_parallel_size": 2}}])
    assert [(c["prefill"]["replicas"], c["decode"]["replicas"]) for c in tp2] == [(2, 1)]


def test_pd_wins_p99_itl_at_high_load_and_the_answer_says_which_wins_where() -> None:
    # at twice the trace's rate each colocated replica's long prefills stall its decodes;
    # the prefill replica takes them off the decode replica
    result = compare(BASE, mixed(60), num_gpus=2, loads=(0.5, 2.0))
    low, high = result["loads"]
    assert high["best_pd"]["label"] == "P/D 1:1"
    assert high["best_pd"]["value"] < 0.5 * high["colocated"]["value"]
    answer = result["answer"]
    assert answer.startswith("On 2 GPUs:")
    assert "At load x2, P/D 1:1 wins on p99_itl_ms" in answer
    # at half the rate the two are close: the answer names whichever measured lower
    low_winner = ("P/D 1:1" if low["best_pd"]["value"] < low["colocated"]["value"]
                  else "colocated x2")
    assert f"At load x0.5, {low_winner} wins on p99_itl_ms" in answer
