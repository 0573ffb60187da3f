"""A router's prompt block hashes (core/prefix.py prompt_block_hashes) against the hashes an
engine's own prefix cache stores: equal, whichever engine and whatever ran before, as vLLM's
block hashes are (vllm/v1/core/kv_cache_utils.py hash_block_tokens: a digest of the parent hash
and the block's tokens, no per-engine state)."""

from __future__ import annotations

from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.kv_cache_manager import PagedKVCacheManager
from servescope.core.prefix import BlockHasher, prompt_block_hashes
from servescope.core.request import Request, RequestSpec

CONFIG = EngineConfig(num_gpu_blocks=64, block_size=4, enable_prefix_caching=True,
                      max_num_batched_tokens=64)


def cached_hashes(specs: list[RequestSpec]) -> set[int]:
    """Every hash the engine's pool holds for a block once the run has ended."""
    engine = Engine(CONFIG, specs, fast_forward=False)
    engine.run_to_end()
    assert isinstance(engine.kv, PagedKVCacheManager)
    return {h for h in engine.kv.pool.block_hash if h is not None}


def test_the_hashes_a_replica_caches_are_the_functions() -> None:
    # 14-token prompt, 8 of them a system prompt, 4-token blocks: 3 full prompt blocks
    spec = RequestSpec("a", 14, 3, arrival_step=0, prefix=(("sys", 8),))
    hashes = prompt_block_hashes(spec, 4)
    assert len(hashes) == 3
    assert set(hashes) <= cached_hashes([spec])


def test_another_engine_with_other_history_gives_the_same_hashes() -> None:
    spec = RequestSpec("b", 13, 2, arrival_step=5, prefix=(("sys", 8),))
    earlier = [RequestSpec(f"x{i}", 9, 2, arrival_step=0, prefix=(("doc", 6),)) for i in range(3)]
    alone, after_others = cached_hashes([spec]), cached_hashes([*earlier, spec])
    assert set(prompt_block_hashes(spec, 4)) <= alone & after_others


def test_shared_segments_share_leading_hashes_only() -> None:
    a = RequestSpec("a", 20, 1, prefix=(("sys", 8), ("user1", 4)))
    b = RequestSpec("b", 20, 1, prefix=(("sys", 8), ("user2", 4)))
    ha, hb = prompt_block_hashes(a, 4), prompt_block_hashes(b, 4)
    assert ha[:2] == hb[:2]  # tokens 0..7: the system prompt
    assert not set(ha[2:]) & set(hb[2:])  # the rest differs, so does every later block
    assert all(h > 0 for h in ha[:3]) and all(h < 0 for h in ha[3:])  # own blocks negative


def test_a_memo_hasher_changes_no_value() -> None:
    memo = BlockHasher(4)
    specs = [RequestSpec(f"r{i}", 17, 1, prefix=(("sys", 9),)) for i in range(3)]
    assert [prompt_block_hashes(s, 4, hasher=memo) for s in specs] == \
        [prompt_block_hashes(s, 4) for s in specs]


def test_lookahead_leaves_out_the_block_whose_next_token_is_output() -> None:
    # with one lookahead token a block's hash covers the token after it: an 8-token prompt
    # has one block hashable before output (get_request_block_hasher, num_hash_lookahead)
    spec = RequestSpec("a", 8, 2, prefix=(("sys", 8),))
    assert len(prompt_block_hashes(spec, 4, 1)) == 1
    assert len(prompt_block_hashes(spec, 4)) == 2


def test_hashes_extended_block_by_block_are_the_ones_hashed_at_once() -> None:
    """A decode extends a request's hashes a block at a time (vLLM's request block hasher
    appends each block as it fills, kv_cache_utils.py get_request_block_hasher): the chain
    is the one hashing every block at once gives, with or without a shared segment, and
    from a router's hashes of the prompt."""
    for prefix in ((), (("sys", 6),)):
        spec = RequestSpec("a", 14, 12, arrival_step=0, prefix=prefix)
        whole = list(BlockHasher(4).hashes(Request(spec, 0, 0.0), 6))
        assert len(set(whole)) == 6 and whole[-1] < 0  # own blocks past the shared ones
        for given in (False, True):
            hasher, request = BlockHasher(4), Request(spec, 0, 0.0)
            if given:
                hasher.give("a", prompt_block_hashes(spec, 4))
            got = [list(hasher.hashes(request, num)) for num in range(1, 7)]
            # (own hashes come as far as the request's last full block at once: callers slice)
            assert all(len(hashes) >= num for num, hashes in enumerate(got, 1))
            assert [hashes[:num] for num, hashes in enumerate(got, 1)] == [
                whole[:num] for num in range(1, 7)]
