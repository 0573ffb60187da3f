"""Paged KV cache manager: per-request block tables over the block pool, as vLLM V1 allocates.

A request holds ceil((num_computed_tokens + n) / block_size) blocks after being scheduled for n
tokens; blocks are taken on demand, plus a drafter's lookahead slots under speculative
decoding (none otherwise).
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from servescope.core.block_pool import BlockPool
from servescope.core.decode_caching import cache_completed, cache_decoded
from servescope.core.decode_stretch import DecodeBlocks, periodic
from servescope.core.prefix import BlockHasher
from servescope.core.request import Request, RequestStatus
from servescope.core.running_batch import RunningBatch


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


class KVCacheManager(Protocol):
    """What schedulers need from a KV allocator, paged or contiguous."""

    block_size: int
    enable_caching: bool
    on_demand: bool  # blocks are taken as tokens are computed (paged), not reserved up front
    num_table_blocks: int  # sum of block-table lengths
    pool: BlockPool
    tables: dict[str, list[int]]

    @property
    def num_free_blocks(self) -> int: ...

    def reservation_tokens(self, prompt_len: int, output_len: int) -> int: ...

    def get_computed_blocks(self, request: Request) -> list[int]: ...

    def allocate_slots(self, request: Request, num_new_tokens: int,
                       computed: list[int] | None = None, reserve_full: bool = False,
                       watermark: bool = False, num_lookahead_tokens: int = 0,
                       delay_cache_blocks: bool = False,
                       ) -> list[int] | None: ...

    def reserve(self, request: Request, num_tokens: int) -> list[int] | None: ...

    def num_fitting(self, num_tokens: int) -> int: ...

    def free(self, request: Request) -> None: ...

    def append_blocks(self, request_ids: list[str]) -> list[int]: ...

    def cache_full_blocks(self, request: Request, num_tokens: int) -> None: ...

    def waste(self, running: RunningBatch) -> dict[str, int]: ...


class PagedKVCacheManager:
    on_demand = True

    def __init__(self, num_gpu_blocks: int, block_size: int, enable_caching: bool,
                 watermark: float = 0.0, num_hash_lookahead_tokens: int = 0,
                 num_prefill_lookahead: int = 0) -> None:
        """The last two as vLLM's KVCacheManager takes them (core/scheduler/spec_decode.py):
        tokens after a block its hash covers, and tokens a multi-module MTP drafter reads past
        a prefill chunk (the last num_prefill_lookahead - 1 computed are not cached yet)."""
        self.block_size = block_size
        self.enable_caching = enable_caching
        self.pool = BlockPool(num_gpu_blocks, enable_caching)
        self.hasher = BlockHasher(block_size, num_hash_lookahead_tokens)
        self.num_hash_lookahead_tokens = num_hash_lookahead_tokens
        self.num_prefill_lookahead = num_prefill_lookahead
        # vllm/v1/core/kv_cache_coordinator.py KVCacheCoordinator: num_reprefillable_tokens
        self.num_reprefillable_tokens = max(0, num_prefill_lookahead - 1)
        self.tables: dict[str, list[int]] = {}
        self.num_cached_blocks: dict[str, int] = {}
        self.num_table_blocks = 0  # sum of block-table lengths (a shared block counts per table)
        self.watermark_blocks = int(watermark * self.pool.num_usable_blocks)
        # the cap on a drafter's lookahead slots (slot_tokens): max_model_len where given
        # (scheduler/make.py), else the pool's tokens
        self.max_slot_tokens = self.pool.num_usable_blocks * block_size

    def slot_tokens(self, num_tokens: int, num_lookahead_tokens: int) -> int:
        """The slots a request needs for `num_tokens` and a drafter's lookahead past them:
        vLLM's allocate_slots caps num_tokens_need_slot at max_model_len, below which its
        scheduler keeps the tokens themselves (num_new_tokens <= max_model_len - 1 - computed),
        and refuses to start with a max_model_len over the pool
        (kv_cache_utils.check_enough_kv_cache_memory): with none given, the pool caps the
        lookahead, never the tokens."""
        return max(num_tokens, min(num_tokens + num_lookahead_tokens, self.max_slot_tokens))

    @property
    def unique_ids(self) -> bool:
        """Whether no request id comes twice: then own-block hashes stay out of the cache map
        until a preemption (core/block_pool.py)."""
        return self.pool.defer_own

    @unique_ids.setter
    def unique_ids(self, value: bool) -> None:
        self.pool.defer_own = value

    @property
    def num_free_blocks(self) -> int:
        return self.pool.num_free_blocks

    def blocks_needed(self, num_tokens: int) -> int:
        return cdiv(num_tokens, self.block_size)

    def reservation_tokens(self, prompt_len: int, output_len: int) -> int:
        return prompt_len + output_len

    def get_computed_blocks(self, request: Request) -> list[int]:
        """The longest run of cached full blocks from block 0, never covering the last token."""
        if not self.enable_caching:
            return []
        # vLLM caps a hit at num_tokens - 1 (KVCacheManager.get_computed_blocks) and finds
        # only blocks hashed so far (get_request_block_hasher: their lookahead tokens exist)
        max_blocks = (request.num_tokens - max(1, self.num_hash_lookahead_tokens)
                      ) // self.block_size
        hits: list[int] = []
        for block_hash in self.hasher.hashes(request, max_blocks)[:max_blocks]:
            block = self.pool.lookup(block_hash)
            if block is None:
                break
            hits.append(block)
        return hits

    def allocate_slots(self, request: Request, num_new_tokens: int,
                       computed: list[int] | None = None, reserve_full: bool = False,
                       watermark: bool = False, num_lookahead_tokens: int = 0,
                       delay_cache_blocks: bool = False,
                       ) -> list[int] | None:
        """Blocks appended to the request's table (hits first), or None when they do not fit.

        `reserve_full` requires room for the whole current sequence, not just this chunk
        (vLLM's scheduler_reserve_full_isl); `watermark` keeps the watermark blocks free;
        `num_lookahead_tokens` more slots are taken past the new tokens for a drafter's KV
        (vllm/v1/core/kv_cache_manager.py KVCacheManager.allocate_slots: num_tokens_need_slot);
        `delay_cache_blocks`: the tokens arrive by a KV connector's load, cached when it ends.
        """
        computed = computed or []
        table = self.tables.setdefault(request.id, [])
        num_computed = request.num_computed_tokens + len(computed) * self.block_size
        num_held = len(table) + len(computed)
        num_new_blocks = max(self.blocks_needed(self.slot_tokens(
            num_computed + num_new_tokens, num_lookahead_tokens)) - num_held, 0)
        ref_cnt = self.pool.ref_cnt
        num_evictable = sum(1 for b in computed if ref_cnt[b] == 0) if computed else 0
        needed = num_new_blocks + num_evictable
        if reserve_full:
            full = self.blocks_needed(request.num_tokens) - len(table) - len(computed)
            needed = max(needed, max(full, 0) + num_evictable)
        if watermark:
            needed += self.watermark_blocks
        if needed > self.pool.num_free_blocks:
            if not table:
                del self.tables[request.id]
            return None
        self.pool.touch(computed)
        table.extend(computed)
        if computed:
            self.num_cached_blocks[request.id] = len(computed)
        new_blocks = self.pool.get_new_blocks(num_new_blocks)
        table.extend(new_blocks)
        self.num_table_blocks += len(computed) + len(new_blocks)
        if self.enable_caching and not delay_cache_blocks:  # (a KV load caches them once
            # it lands: core/kv_connector.py)
            self.cache_full_blocks(request, min(num_computed + num_new_tokens, request.num_tokens))
        return computed + new_blocks

    def append_blocks(self, request_ids: list[str]) -> list[int]:
        """One new block from the free-queue head onto each table, in order (decodes whose
        token starts a block); the caller has checked that enough blocks are free."""
        blocks = self.pool.get_new_blocks(len(request_ids))
        for rid, block in zip(request_ids, blocks, strict=True):
            self.tables[rid].append(block)
        self.num_table_blocks += len(blocks)
        return blocks

    def free(self, request: Request) -> None:
        table = self.tables.pop(request.id, None)
        self.num_cached_blocks.pop(request.id, None)
        if table:
            self.num_table_blocks -= len(table)
            if request.status is not RequestStatus.FINISHED:  # preempted: it may come back
                self.pool.publish_own(table)
            self.pool.free_blocks(table[::-1])

    def num_cacheable_tokens(self, request: Request, num_tokens: int) -> int:
        """Of `num_tokens` computed, those whose blocks may be cached: finalized (vllm/v1/core/
        kv_cache_coordinator.py KVCacheCoordinator.get_num_cacheable_tokens: a multi-module MTP
        may re-prefill the last num_reprefillable_tokens) and hashed (single_type_kv_cache_
        manager.py SingleTypeKVCacheManager.cache_blocks: a block's hash waits for the
        num_hash_lookahead_tokens after it, kv_cache_utils.py get_request_block_hasher)."""
        return min(num_tokens - self.num_reprefillable_tokens,
                   request.num_tokens - self.num_hash_lookahead_tokens)

    def cache_full_blocks(self, request: Request, num_tokens: int) -> None:
        table = self.tables[request.id]
        done = self.num_cached_blocks.get(request.id, 0)
        num_full = self.num_cacheable_tokens(request, num_tokens) // self.block_size
        if num_full <= done:
            return
        hashes = self.hasher.hashes(request, num_full)
        self.pool.cache_blocks(table[done:num_full], hashes[done:num_full], request.id)
        self.num_cached_blocks[request.id] = num_full

    def decode_steps_fit(self, start: np.ndarray | list[int], num_steps: int) -> int:
        """How many of `num_steps` decode steps (row i at position start[i] + j at step j) the
        free blocks cover: each block boundary a row reaches takes one free block."""
        bs = self.block_size
        num_free = self.num_free_blocks
        if len(start) * -(-num_steps // bs) <= num_free:
            return num_steps  # no row crosses more boundaries than that
        per_residue = np.bincount(np.asarray(start) % bs, minlength=bs)
        per_step = per_residue[(-np.arange(num_steps)) % bs]
        return int(per_step.cumsum().searchsorted(num_free, "right"))

    def advance_decodes(self, requests: list[Request], start: np.ndarray, num_steps: int,
                        record: bool = True) -> DecodeBlocks:
        """The blocks of `num_steps` decode steps (see decode_steps_fit, which must cover them):
        taken from the free queue in (step, row) order, and the blocks those steps complete
        cached. Their events come back as data for the run's records (unless `record` is
        False: then the pool drops them), not in the pool."""
        bs = self.block_size
        steps, rows = periodic((-start) % bs, bs, num_steps)
        evicted: list[int] = []
        blocks = self.pool.get_new_blocks(len(rows), evicted)
        tables = self.tables
        for row, block in zip(rows.tolist(), blocks, strict=True):
            tables[requests[row].id].append(block)
        self.num_table_blocks += len(blocks)
        stored: list[tuple[int, int, tuple[int, ...]]] = []
        if self.enable_caching and record:
            stored = cache_decoded(self, requests, start, num_steps)
        elif self.enable_caching:
            cache_completed(self, requests, start.tolist(), num_steps)
        return DecodeBlocks(steps, rows, blocks, set(evicted), stored)

    def advance_decodes_unrecorded(self, requests: list[Request], starts: list[int],
                                   num_steps: int, known_lag: int) -> None:
        """advance_decodes(record=False), giving back nothing (a run ahead keeps neither the
        blocks nor their events); `known_lag`: tokens of each row still in flight, not cached
        yet (async scheduling: one)."""
        bs = self.block_size  # (periodic's (step, row) order, in plain Python: a batch is small)
        if num_steps == 1:  # (most often: a finishing pair's step, a stretch of one)
            rows = [row for row, p in enumerate(starts) if not p % bs]
        else:  # a period's crossings by first boundary, then row
            order = sorted((first, row) for row, first in enumerate(-p % bs for p in starts)
                           if first < num_steps)
            rows = [row for base in range(0, num_steps, bs) for first, row in order
                    if first + base < num_steps]
        if rows:
            tables = self.tables
            for row, block in zip(rows, self.pool.get_new_blocks(len(rows), []), strict=True):
                tables[requests[row].id].append(block)
            self.num_table_blocks += len(rows)
        if self.enable_caching:
            cache_completed(self, requests, [p - known_lag for p in starts], num_steps)

    def reserve(self, request: Request, num_tokens: int) -> list[int] | None:
        """Blocks for `num_tokens` up front (static batching's padded shape)."""
        needed = self.blocks_needed(num_tokens)
        if needed > self.pool.num_free_blocks:
            return None
        blocks = self.pool.get_new_blocks(needed)
        self.tables[request.id] = blocks
        self.num_table_blocks += len(blocks)
        return blocks

    def num_fitting(self, num_tokens: int) -> int:
        """How many reservations of `num_tokens` the free blocks hold now."""
        return self.pool.num_free_blocks // self.blocks_needed(num_tokens)

    def waste(self, running: RunningBatch) -> dict[str, int]:
        """Token slots by PagedAttention Fig. 2 category: only partial last blocks are wasted."""
        return self.waste_of(self.num_table_blocks, running.total_computed(),
                             self.pool.num_free_blocks)

    def waste_of(self, num_table_blocks: Any, num_computed: Any, num_free: Any) -> dict[str, Any]:
        """waste() from its three counts: ints, or numpy arrays of them (one a step of a run)."""
        internal = num_table_blocks * self.block_size - num_computed
        used = self.pool.num_usable_blocks - num_free
        return {"token_states": used * self.block_size - internal, "reserved": 0 * internal,
                "internal_fragmentation": internal, "external_fragmentation": 0 * internal}
