"""A drafter's lookahead slots capped as vLLM caps them (vllm/v1/core/kv_cache_manager.py
KVCacheManager.allocate_slots: num_tokens_need_slot = min(computed + new + lookahead,
max_model_len)): a request near max_model_len takes no block past it, and one that fits the
pool alone is never preempted forever by its own lookahead (vLLM refuses to start with a
max_model_len over the pool, so the pool's tokens cap the slots when none is given)."""

from __future__ import annotations

import pytest
from support.factories import run_checked

from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.request import RequestSpec

EAGLE3 = {"method": "eagle3", "num_speculative_tokens": 4, "model": "org/draft"}


@pytest.mark.parametrize("async_scheduling", [False, True])
def test_a_request_that_fits_the_pool_alone_finishes_despite_its_lookahead(async_scheduling):
    # 23 usable blocks of 2 hold 46 tokens; the request's 14 + 30 fit, its last verify's 4
    # lookahead slots would not: uncapped, it was preempted and resumed forever
    config = EngineConfig(block_size=2, num_gpu_blocks=24, max_num_seqs=1,
                          max_num_batched_tokens=8, async_scheduling=async_scheduling,
                          speculative_config=EAGLE3)
    engine = Engine(config, [RequestSpec("r0", 14, 30, arrival_step=0)])
    for n, _ in enumerate(engine.run()):
        assert n < 200, "the request never finished"
        assert engine.kv.pool.num_free_blocks >= 0
    assert [r.id for r in engine.done_requests] == ["r0"]


def test_lookahead_slots_stop_at_max_model_len():
    config = EngineConfig(block_size=4, num_gpu_blocks=200, max_num_seqs=4,
                          max_num_batched_tokens=64, max_model_len=40,
                          speculative_config=EAGLE3)
    engine = Engine(config, [RequestSpec("r0", 20, 20, arrival_step=0)])
    most = 0
    for _ in engine.run():
        most = max(most, len(engine.kv.tables.get("r0", ())))
    assert most == 40 // 4  # uncapped: cdiv(39 + 4, 4) = 11 at the last verify


@pytest.mark.parametrize("async_scheduling", [False, True])
def test_the_pool_caps_only_the_lookahead_never_the_tokens_scheduled(async_scheduling):
    # ngram (no lookahead slots) verifying 3 drafts near the pool's end: its tokens get their
    # blocks (or it waits), as before there was a cap (a hypothesis example found the cap
    # taking slots from the tokens themselves)
    config = EngineConfig(block_size=2, num_gpu_blocks=25, max_num_seqs=1,
                          max_num_batched_tokens=8, async_scheduling=async_scheduling,
                          speculative_config={"method": "ngram", "num_speculative_tokens": 3,
                                              "model": "org/draft"})
    records = run_checked(config, [RequestSpec("r0", 17, 30, arrival_step=0, spec_accepted=())],
                          max_steps=500)
    assert [rid for record in records for rid in record.finished] == ["r0"]
