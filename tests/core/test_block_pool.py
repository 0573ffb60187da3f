"""With unique request ids, own-block hashes keyed by arrival and kept out of the prefix-cache
map until their request is preempted (core/prefix.py, core/block_pool.py) change no decision
and no record: the same lookups, block ids and cache events as interning them by id and putting
every hash in the map when it is computed."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.factories import checked_fast_forward, serialized

from servescope.core.block_pool import BlockPool
from servescope.core.config import POLICIES, EngineConfig
from servescope.core.engine import Engine
from servescope.core.invariants import check_invariants
from servescope.core.kv_cache_manager import PagedKVCacheManager
from servescope.core.request import RequestSpec


def step_path(config: EngineConfig, specs: list[RequestSpec], defer: bool | None = None,
              ) -> tuple[list[str], Engine]:
    """Every record, invariants checked after each; `defer` overrides the engine's choice
    (False: own hashes in the map when computed, as before)."""
    engine = Engine(config, specs, fast_forward=False)
    if defer is not None:
        assert isinstance(engine.kv, PagedKVCacheManager)
        engine.kv.unique_ids = defer
    lines = []
    for record in engine.run():
        check_invariants(engine.scheduler, record)
        lines.append(serialized(record))
    return lines, engine


rows_st = st.lists(st.tuples(st.integers(1, 70), st.integers(1, 90), st.integers(0, 40),
                             st.sampled_from([(), (("sys", 24),), (("doc", 9),)]),
                             st.integers(0, 2)),
                   min_size=2, max_size=14)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=rows_st, policy=st.sampled_from(POLICIES),
       block_size=st.sampled_from([1, 4, 16]), num_gpu_blocks=st.integers(12, 90),
       priority=st.booleans(), budget=st.integers(16, 128), overlap=st.booleans())
def test_deferred_own_hashes_give_the_records_of_eager_ones(
        rows: list, policy: str, block_size: int, num_gpu_blocks: int, priority: bool,
        budget: int, overlap: bool) -> None:
    config = EngineConfig.from_dict({
        "policy": policy, "block_size": block_size, "num_gpu_blocks": num_gpu_blocks,
        "enable_prefix_caching": True, "max_num_seqs": 8, "max_num_batched_tokens": budget,
        "scheduling_policy": "priority" if priority and policy != "static" else "fcfs",
        "async_scheduling": overlap and policy == "vllm-v1"})
    specs = [RequestSpec(f"r{i}", p, o, arrival_step=a, prefix=pre, priority=prio)
             for i, (p, o, a, pre, prio) in enumerate(rows)]
    eager, _ = step_path(config, specs, defer=False)
    deferred, engine = step_path(config, specs)
    assert isinstance(engine.kv, PagedKVCacheManager) and engine.kv.unique_ids  # the default
    assert deferred == eager
    fast, _ = checked_fast_forward(config, specs)
    assert [serialized(r) for r in fast] == eager


def preempted_and_resumed() -> tuple[EngineConfig, list[RequestSpec]]:
    """A pool too small for both: the later request preempts the earlier, which comes back to
    find its own computed blocks still cached."""
    config = EngineConfig(num_gpu_blocks=15, block_size=4, max_num_seqs=4,
                          max_num_batched_tokens=64, enable_prefix_caching=True)
    return config, [RequestSpec("a", 20, 30, arrival_step=0),
                    RequestSpec("b", 20, 30, arrival_step=3)]


def cache_hits(lines: list[str], field: str) -> list[int]:
    """The prefix-cache hits of the requests in each record's `field` ("new", "resumed")."""
    hits: list[int] = []
    for line in lines:
        rec: dict[str, Any] = json.loads(line)[0]  # serialized(): [to_dict(), ...]
        hits += [rec["num_cached_tokens"][rid] for rid in rec[field]]
    return hits


def test_a_preempted_request_finds_its_own_blocks_when_it_resumes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    config, specs = preempted_and_resumed()
    eager, _ = step_path(config, specs, defer=False)
    deferred, _ = step_path(config, specs)
    assert any(cache_hits(eager, "resumed")) and deferred == eager
    monkeypatch.setattr(BlockPool, "publish_own", lambda self, blocks: None)
    unpublished, _ = step_path(config, specs)  # the map would miss them: the test sees it
    assert not any(cache_hits(unpublished, "resumed"))


def test_an_id_that_comes_again_finds_the_earlier_requests_blocks() -> None:
    """A later request with a finished one's id looks up the same own hashes (its tokens are
    named by id): the engine does not defer then, so it still finds them."""
    config = EngineConfig(num_gpu_blocks=40, block_size=4, enable_prefix_caching=True)
    specs = [RequestSpec("same", 30, 3, arrival_step=0),
             RequestSpec("same", 30, 3, arrival_step=20)]
    lines, engine = step_path(config, specs)
    assert isinstance(engine.kv, PagedKVCacheManager) and not engine.kv.unique_ids
    assert lines == step_path(config, specs, defer=False)[0]
    assert cache_hits(lines, "new")[-1] > 0


def test_evictions_wait_as_block_ids_until_a_record_takes_them() -> None:
    """A hashed free block handed out again leaves the cache with a 'removed' event of its own
    (vLLM's BlockPool._maybe_evict_cached_block: one BlockRemoved per block); the pool keeps
    them as block ids and block_events makes them, in order, among the other events."""
    from servescope.core.block_pool import block_events
    from servescope.core.records import BlockEvent

    pool = BlockPool(6, enable_caching=True)
    first = pool.get_new_blocks(3)
    pool.cache_blocks(first, [11, 12, 13], "a")
    pool.free_blocks(first[::-1])  # hashed: to the tail, block 3 first
    pool.get_new_blocks(4)  # blocks 4, 5 unhashed from the head, then 3 and 2 evicted
    pending, _ = pool.drain()
    assert pending[-1] == [3, 2]
    assert block_events(pending) == (BlockEvent("stored", (1, 2, 3), "a"),
                                     BlockEvent("removed", (3,)), BlockEvent("removed", (2,)))


def test_a_freed_table_goes_tail_first_and_a_free_hit_is_found_where_it_waits() -> None:
    """vllm/v1/core/single_type_kv_cache_manager.py free: a table is freed tail first, each
    block whose ref count drops to 0 queued (block_pool.py BlockPool.free_blocks); here the
    unhashed ones at the head, the hashed at the tail (core/block_pool.py's queue). A free block
    with a hash in the map leaves the queue's middle when a prefix hit takes it (touch)."""
    pool = BlockPool(10, enable_caching=True)
    pool.defer_own = True
    own = pool.get_new_blocks(3)  # [1, 2, 3]
    pool.cache_blocks(own[:2], [-10, -11], "a")  # own hashes: the map stays empty
    pool.free_blocks(own[::-1])
    assert list(pool.free_queue) == [3, 4, 5, 6, 7, 8, 9, 2, 1]

    held = pool.get_new_blocks(2)  # [3, 4]
    pool.cache_blocks(held[:1], [7], "b")  # a shared hash: in the map
    pool.touch(held[:1])  # block 3 is in a second table too
    pool.free_blocks(held[::-1])  # [4, 3]: 3 is still held
    assert (pool.ref_cnt[3], pool.ref_cnt[4]) == (1, 0)
    assert list(pool.free_queue) == [4, 5, 6, 7, 8, 9, 2, 1]
    pool.free_blocks([3])
    assert list(pool.free_queue) == [4, 5, 6, 7, 8, 9, 2, 1, 3]
    pool.touch([pool.lookup(7)])  # a hit on the free block 3, behind two blocks freed before
    assert list(pool.free_queue) == [4, 5, 6, 7, 8, 9, 2, 1]

    mixed = pool.get_new_blocks(7)  # [4, 5, 6, 7, 8, 9, 2]: 2 kept its hash until now
    pool.cache_blocks([5], [-20], "c")
    pool.free_blocks([5, 4])  # not a table's order (hashed first): split block by block
    assert list(pool.free_queue) == [4, 1, 5]
    assert mixed[-1] == 2 and pool.block_hash[2] is None  # evicted when handed out again
