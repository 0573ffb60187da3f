"""The paged KV cache manager kept as counts, for runs whose records nobody reads.

Block ids decide nothing while no block can be found again in the prefix cache: no request has
a shared prefix segment and request ids are unique, so a block's hash is its own request's,
and only that request, resumed after a preemption, could look it up. Until the first preemption
with caching on, this manager keeps what the decisions read: the number of free blocks, each
request's table length and how many of its blocks are cached. At that preemption the scheduler
asks it for `exact()`: a PagedKVCacheManager in the same state with fresh block ids, which runs
the rest, so the preempted request's cached blocks are evicted or found again block by block.
(Which free blocks then hold a hash of a finished request changes nothing: nobody can find
them, and they are all handed out before the preempted request's blocks, freed after them.)

Engine(records=False) uses it for vLLM V1 (sync) where it applies; its summaries equal the
paged manager's (tests/core/test_kv_counting.py).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from servescope.core.block_pool import NULL_BLOCK
from servescope.core.decode_stretch import DecodeBlocks
from servescope.core.kv_cache_manager import PagedKVCacheManager, cdiv
from servescope.core.request import Request, RequestStatus
from servescope.core.running_batch import RunningBatch

NO_BLOCKS = DecodeBlocks(np.zeros(0, np.int64), np.zeros(0, np.int64), [], set(), [])


class CountingKVCacheManager(PagedKVCacheManager):
    """Counts in place of the block pool; `allocate_slots` and `append_blocks` hand back
    placeholders (null blocks), never ids. Only what vLLM V1's scheduler calls is counted
    (make_scheduler gives it to no other policy: static batching's `reserve` is not)."""

    def __init__(self, num_gpu_blocks: int, block_size: int, enable_caching: bool,
                 watermark: float = 0.0, num_hash_lookahead_tokens: int = 0,
                 num_prefill_lookahead: int = 0) -> None:
        super().__init__(num_gpu_blocks, block_size, enable_caching, watermark,
                         num_hash_lookahead_tokens, num_prefill_lookahead)
        self.num_free = self.pool.num_free_blocks
        self.lengths: dict[str, int] = {}  # each table's length

    @property
    def num_free_blocks(self) -> int:
        return self.num_free

    def get_computed_blocks(self, request: Request) -> list[int]:
        return []  # no hash is in the cache map before a preemption (see the docstring)

    def allocate_slots(self, request: Request, num_new_tokens: int,
                       computed: list[int] | None = None, reserve_full: bool = False,
                       watermark: bool = False, num_lookahead_tokens: int = 0,
                       delay_cache_blocks: bool = False,
                       ) -> list[int] | None:
        held = self.lengths.get(request.id, 0)
        num_computed = request.num_computed_tokens
        num_new_blocks = max(cdiv(self.slot_tokens(num_computed + num_new_tokens,
                                                   num_lookahead_tokens),
                                  self.block_size) - held, 0)
        needed = num_new_blocks
        if reserve_full:
            needed = max(needed, cdiv(request.num_tokens, self.block_size) - held)
        if watermark:
            needed += self.watermark_blocks
        if needed > self.num_free:
            return None
        self.num_free -= num_new_blocks
        self.lengths[request.id] = held + num_new_blocks
        self.num_table_blocks += num_new_blocks
        if self.enable_caching and not delay_cache_blocks:
            self.cache_full_blocks(request, min(num_computed + num_new_tokens, request.num_tokens))
        return [NULL_BLOCK] * num_new_blocks

    def append_blocks(self, request_ids: list[str]) -> list[int]:
        lengths = self.lengths
        for rid in request_ids:
            lengths[rid] += 1
        self.num_free -= len(request_ids)
        self.num_table_blocks += len(request_ids)
        return [NULL_BLOCK] * len(request_ids)

    def free(self, request: Request) -> None:
        assert request.status is RequestStatus.FINISHED or not self.enable_caching, \
            "a preemption with caching on runs on exact()"
        held = self.lengths.pop(request.id, 0)
        self.num_cached_blocks.pop(request.id, None)
        self.num_table_blocks -= held
        self.num_free += held

    def cache_full_blocks(self, request: Request, num_tokens: int) -> None:
        num_full = self.num_cacheable_tokens(request, num_tokens) // self.block_size
        if num_full > self.num_cached_blocks.get(request.id, 0):
            self.num_cached_blocks[request.id] = num_full

    def advance_decodes(self, requests: list[Request], start: np.ndarray, num_steps: int,
                        record: bool = True) -> DecodeBlocks:
        assert not record, "a counting manager has no block ids for records"
        bs, caching = self.block_size, self.enable_caching
        lengths, cached = self.lengths, self.num_cached_blocks
        taken = 0
        for request, p in zip(requests, start.tolist(), strict=True):
            crossed = (p + num_steps - 1) // bs - (p - 1) // bs  # blocks its tokens start
            if crossed:
                lengths[request.id] += crossed
                taken += crossed
            if caching and p % bs + num_steps >= bs:
                cached[request.id] = (p + num_steps) // bs
        self.num_free -= taken
        self.num_table_blocks += taken
        return NO_BLOCKS

    def waste(self, running: RunningBatch) -> dict[str, int]:
        return self.waste_of(self.num_table_blocks, running.total_computed(), self.num_free)

    def exact(self, requests: Mapping[str, Request]) -> PagedKVCacheManager:
        """A paged manager in this state, fresh block ids: each table its blocks, its cached
        ones hashed as the request's own (`requests`: the scheduler's, by id); the other blocks
        free (with caching off, self)."""
        if not self.enable_caching:
            return self  # a preempted request's blocks are found by nobody: counts still do
        kv = PagedKVCacheManager(self.pool.num_gpu_blocks, self.block_size, True, 0.0,
                                 self.num_hash_lookahead_tokens, self.num_prefill_lookahead)
        kv.watermark_blocks, kv.unique_ids = self.watermark_blocks, self.unique_ids
        kv.max_slot_tokens = self.max_slot_tokens
        kv.pool.record_events = self.pool.record_events
        kv.pool.kv_event_queue = self.pool.kv_event_queue  # a subscriber stays subscribed
        for rid, length in self.lengths.items():
            table = kv.tables[rid] = kv.pool.get_new_blocks(length)
            num_cached = self.num_cached_blocks.get(rid, 0)
            if num_cached:
                hashes = kv.hasher.hashes(requests[rid], num_cached)[:num_cached]
                kv.pool.cache_blocks(table[:num_cached], hashes, rid, emit=False)
                kv.num_cached_blocks[rid] = num_cached
        kv.num_table_blocks = self.num_table_blocks
        kv.pool.drain()
        assert kv.num_free_blocks == self.num_free
        return kv
