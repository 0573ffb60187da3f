"""Engine(records=False) keeps vLLM V1's paged cache as counts where block ids decide nothing
(core/kv_counting.py): its summaries are the block-by-block engine's, preemptions included."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.kv_cache_manager import PagedKVCacheManager
from servescope.core.kv_counting import CountingKVCacheManager
from servescope.core.request import RequestSpec

rows_st = st.lists(st.tuples(st.integers(1, 120), st.integers(1, 90), st.integers(0, 60),
                             st.integers(0, 2)), min_size=1, max_size=24)
config_st = st.fixed_dictionaries({
    "scheduling_policy": st.sampled_from(["fcfs", "priority"]),
    "block_size": st.sampled_from([1, 4, 16]),
    "num_gpu_blocks": st.integers(12, 300),
    "max_num_seqs": st.integers(2, 32),
    "max_num_batched_tokens": st.integers(64, 256),
    "enable_prefix_caching": st.booleans(),
    "enable_chunked_prefill": st.booleans(),
    "long_prefill_token_threshold": st.sampled_from([0, 24]),
    "scheduler_reserve_full_isl": st.booleans(),
    "watermark": st.sampled_from([0.0, 0.05]),
})


def _specs(rows: list, time_clock: bool) -> list[RequestSpec]:
    return [RequestSpec(f"r{i}", p, o, priority=prio,
                        **({"arrival_s": a * 0.013} if time_clock else {"arrival_step": a}))
            for i, (p, o, a, prio) in enumerate(rows)]


def _summary(engine: Engine) -> str:
    engine.run_to_end()
    return json.dumps(engine.summary(), sort_keys=True)


# A request preempted and then refused as stuck: its preemption is in no finished request's
# count (the summary's num_preemptions is 0), yet it handed the cache over (found by hypothesis)
STUCK_AFTER_PREEMPTION = ({
    "scheduling_policy": "fcfs", "block_size": 1, "num_gpu_blocks": 69, "max_num_seqs": 2,
    "max_num_batched_tokens": 64, "enable_prefix_caching": True, "enable_chunked_prefill": False,
    "long_prefill_token_threshold": 24, "scheduler_reserve_full_isl": True, "watermark": 0.0},
    [(1, 66, 0, 0), (67, 1, 0, 0)])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=config_st, rows=rows_st, time_clock=st.booleans(), fast_forward=st.booleans())
@example(config=STUCK_AFTER_PREEMPTION[0], rows=STUCK_AFTER_PREEMPTION[1], time_clock=False,
         fast_forward=True)
def test_counts_give_the_block_by_block_summary(config: dict, rows: list, time_clock: bool,
                                                fast_forward: bool) -> None:
    cfg = EngineConfig.from_dict(config)
    specs = _specs(rows, time_clock)
    counted = Engine(cfg, specs, fast_forward=fast_forward, records=False)
    assert isinstance(counted.kv, CountingKVCacheManager)
    reference = Engine(cfg, specs, fast_forward=False)
    preempted = any([record.preempted for record in reference.run()])  # finished or not
    expected = json.dumps(reference.summary(), sort_keys=True)
    assert _summary(counted) == expected
    # the first preemption with caching on hands the rest of the run to the paged manager
    assert (type(counted.kv) is PagedKVCacheManager) == (preempted and cfg.enable_prefix_caching)


@pytest.mark.parametrize("num_gpu_blocks", [2000, 160])
def test_a_priced_run_counted_is_the_step_paths(num_gpu_blocks: int) -> None:
    """The cost model prices each step from its tokens and starts: counted and fast-forwarded,
    the same clock, to the bit, as block by block one step at a time (160 blocks: preempting)."""
    cfg = EngineConfig.from_dict({"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100",
                                  "num_gpu_blocks": num_gpu_blocks, "max_num_seqs": 24})
    rng = np.random.default_rng(7)
    specs = [RequestSpec(f"c{i}", int(rng.integers(50, 1500)), int(rng.integers(20, 400)),
                         arrival_s=float(i * rng.uniform(0.02, 0.3))) for i in range(40)]
    counted = Engine(cfg, specs, records=False)
    expected = _summary(Engine(cfg, specs, fast_forward=False))
    assert _summary(counted) == expected
    assert (json.loads(expected)["num_preemptions"] > 0) == (num_gpu_blocks == 160)


def test_a_resumed_request_finds_its_own_blocks_after_the_hand_over() -> None:
    """Two long requests in a pool too small for both: the second is preempted and, resumed,
    finds the blocks it had cached (the counts could not say which survived)."""
    cfg = EngineConfig.from_dict({"block_size": 4, "num_gpu_blocks": 40,
                                  "max_num_batched_tokens": 64})
    specs = [RequestSpec("a", 60, 80, arrival_step=0), RequestSpec("b", 60, 80, arrival_step=0)]
    reference = Engine(cfg, specs, fast_forward=False)
    found = [r.num_cached_tokens[rid] for r in reference.run() for rid in r.resumed]
    assert found and found[0] > 0
    counted = Engine(cfg, specs, records=False)
    assert _summary(counted) == json.dumps(reference.summary(), sort_keys=True)
    assert type(counted.kv) is PagedKVCacheManager


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=config_st, rows=rows_st, time_clock=st.booleans())
def test_the_counts_are_the_paged_managers_after_every_step(config: dict, rows: list,
                                                           time_clock: bool) -> None:
    """Side by side with the paged manager: the same counts after each step (or run), and
    after the hand-over the same tables, cached blocks and findable free blocks."""
    # caching on, the pool a few blocks over the longest request: most runs preempt
    longest = -(-max(p + o for p, o, _, _ in rows) // config["block_size"])
    config = {**config, "enable_prefix_caching": True,
              "num_gpu_blocks": longest + 2 + config["num_gpu_blocks"] % 40}
    cfg = EngineConfig.from_dict(config)
    specs = _specs(rows, time_clock)
    counted, paged = Engine(cfg, specs, records=False), Engine(cfg, specs)
    while isinstance(kv := counted.kv, CountingKVCacheManager):
        assert kv.lengths == {rid: len(table) for rid, table in paged.kv.tables.items()}
        assert _nonzero(kv.num_cached_blocks) == _nonzero(paged.kv.num_cached_blocks)
        assert (kv.num_free_blocks, kv.num_table_blocks) == (paged.kv.num_free_blocks,
                                                             paged.kv.num_table_blocks)
        steps = counted.advance_unrecorded()
        assert paged.advance_unrecorded() == steps
        if not steps:
            return
    event("handed over")
    assert isinstance(kv, PagedKVCacheManager) and cfg.enable_prefix_caching
    assert _hashed(kv) == _hashed(paged.kv) and _findable(kv) == _findable(paged.kv)
    assert (kv.num_free_blocks, kv.num_table_blocks) == (paged.kv.num_free_blocks,
                                                         paged.kv.num_table_blocks)
    assert _summary(counted) == _summary(paged)


def _nonzero(counts: dict[str, int]) -> dict[str, int]:
    return {rid: n for rid, n in counts.items() if n}


def _hashed(kv: PagedKVCacheManager) -> dict[str, list[bool]]:
    return {rid: [kv.pool.block_hash[b] is not None for b in table]
            for rid, table in kv.tables.items()}


def _findable(kv: PagedKVCacheManager) -> list[tuple[int, int | None]]:
    """(place from the free queue's head, hash) of each free block a lookup can find."""
    pool = kv.pool
    return [(place, pool.block_hash[b]) for place, b in enumerate(pool.free_queue)
            if pool.block_hash[b] is not None and b in pool.copies(pool.block_hash[b] or 0)]


def test_counts_only_where_block_ids_decide_nothing() -> None:
    base = {"block_size": 4, "num_gpu_blocks": 64}
    plain = [RequestSpec("a", 20, 5, arrival_step=0), RequestSpec("b", 20, 5, arrival_step=1)]
    shared = [RequestSpec("a", 20, 5, arrival_step=0, prefix=(("sys", 8),))]
    twice = [RequestSpec("a", 20, 5, arrival_step=0), RequestSpec("a", 20, 5, arrival_step=9)]

    def counted(config: dict, specs: list[RequestSpec], records: bool = False) -> bool:
        cfg = EngineConfig.from_dict({**base, **config})
        return isinstance(Engine(cfg, specs, records=records).kv, CountingKVCacheManager)

    assert counted({}, plain) and counted({"enable_prefix_caching": False}, shared)
    assert not counted({}, plain, records=True)
    assert not counted({}, shared)  # another request may find a shared block
    assert not counted({}, twice)  # a later "a" finds the earlier one's own blocks
    assert not counted({"async_scheduling": True}, plain)
    assert not any(counted({"policy": p}, plain) for p in ("naive", "static", "vllm-v0"))


def test_an_engine_without_records_makes_none() -> None:
    cfg = EngineConfig.from_dict({"block_size": 4, "num_gpu_blocks": 64})
    specs = [RequestSpec("a", 20, 5, arrival_step=0)]
    with pytest.raises(AssertionError, match="no records"):
        Engine(cfg, specs, records=False).advance()
