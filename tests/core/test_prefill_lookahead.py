"""Multi-module MTP's prefill lookahead on hand-made cases: a prefill chunk never ends within
K tokens of the prefill's end (vllm/v1/core/sched/scheduler.py
Scheduler._reserve_prefill_lookahead, VllmConfig.num_prefill_lookahead_tokens = K when
SpeculativeConfig.use_multi_module_mtp), and the last K - 1 computed tokens are not cached
yet (vllm/v1/core/kv_cache_coordinator.py KVCacheCoordinator.get_num_cacheable_tokens)."""

from __future__ import annotations

from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.request import RequestSpec

MTP3 = {"method": "mtp", "num_speculative_tokens": 3, "num_nextn_predict_layers": 3}
EAGLE3 = {"method": "eagle3", "num_speculative_tokens": 3}


def _run(spec: dict, specs: list[RequestSpec], **config) -> list[dict]:
    data = {"num_gpu_blocks": 64, "block_size": 4, "speculative_config": spec, **config}
    return [r.to_dict() for r in Engine(EngineConfig.from_dict(data), specs).run()]


def _plan(rows: list[dict], rid: str) -> list[tuple[int, int]]:
    return [(s["n"], s["start"]) for r in rows for s in r["scheduled"] if s["id"] == rid]


def test_a_chunk_stops_k_tokens_short_of_the_prompt_end_or_reaches_it() -> None:
    one = [RequestSpec("a", 10, 2, arrival_step=0)]
    # budget 8 of 10: 2 would be left (< K = 3), so the chunk gives one token back
    assert _plan(_run(MTP3, one, max_num_batched_tokens=8), "a")[:2] == [(7, 0), (3, 7)]
    # one MTP module, or EAGLE: lookahead 1 changes nothing
    single = {**MTP3, "num_nextn_predict_layers": 1}
    for spec in (single, EAGLE3):
        assert _plan(_run(spec, one, max_num_batched_tokens=8), "a")[:2] == [(8, 0), (2, 8)]


def test_an_admission_the_lookahead_empties_is_skipped_for_the_next() -> None:
    # step 1: a decodes 1 + 3 drafts of a 6-token budget; b (3 tokens) could take 2, leaving
    # 1 < K: its chunk drops to 0 and vLLM skips it (skip_request); c (2 tokens) fits whole
    specs = [RequestSpec("a", 2, 10, arrival_step=0), RequestSpec("b", 3, 2, arrival_step=1),
             RequestSpec("c", 2, 2, arrival_step=1)]
    mtp = _run(MTP3, specs, max_num_batched_tokens=6)
    assert [(s["id"], s["n"]) for s in mtp[1]["scheduled"]] == [("a", 4), ("c", 2)]
    assert mtp[1]["waiting"] == ["b"]
    eagle = _run(EAGLE3, specs, max_num_batched_tokens=6)
    assert [(s["id"], s["n"]) for s in eagle[1]["scheduled"]] == [("a", 4), ("b", 2)]


def test_the_last_k_minus_one_computed_tokens_wait_to_be_cached() -> None:
    # a 12-token prompt, chunk 8: EAGLE-3 caches blocks 0-1 (tokens 0..7, token 8 known);
    # multi-module MTP K = 3 caches only what is 2 tokens behind (6 tokens: block 0)
    one = [RequestSpec("a", 12, 2, arrival_step=0)]

    def stored(spec: dict) -> list[list[int]]:
        rows = _run(spec, one, max_num_batched_tokens=8, enable_prefix_caching=True)
        return [e["block_ids"] for e in rows[0]["kv_events"] if e["type"] == "BlockStored"]

    assert stored(EAGLE3) == [[1, 2]]
    assert stored(MTP3) == [[1]]
