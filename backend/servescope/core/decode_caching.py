"""Caching the blocks a run of decode steps completes (PagedKVCacheManager.advance_decodes and
advance_decodes_unrecorded): which rows complete blocks, and each row's newly full blocks given
their hashes in one call to the pool, without its events (a run's records, when it has any,
say which step stored what)."""

from __future__ import annotations

from typing import Protocol

import numpy as np

from servescope.core.block_pool import BlockHash, BlockPool
from servescope.core.decode_stretch import periodic
from servescope.core.prefix import BlockHasher
from servescope.core.request import Request


class BlockTables(Protocol):
    """What of a paged KV cache manager caching reads and updates."""
    block_size: int
    pool: BlockPool
    hasher: BlockHasher
    tables: dict[str, list[int]]
    num_cached_blocks: dict[str, int]


def cache_completed(kv: BlockTables, requests: list[Request], known: list[int],
                    num_steps: int) -> None:
    """Cache the blocks that `num_steps` more known tokens from `known` complete, without
    their events."""
    bs = kv.block_size  # (a row completes a block when it reaches a boundary)
    rows_done = [row for row, p in enumerate(known) if p % bs + num_steps >= bs]
    if rows_done:
        cache_rows(kv, requests, rows_done, [(known[row] + num_steps) // bs for row in rows_done])


def cache_decoded(kv: BlockTables, requests: list[Request], start: np.ndarray,
                  num_steps: int) -> list[tuple[int, int, tuple[int, ...]]]:
    """Cache what a run completes; the 'stored' event of each (step, row), in that order."""
    bs = kv.block_size
    steps, rows = periodic((-(start + 1)) % bs, bs, num_steps)
    tables = [kv.tables[request.id] for request in requests]
    first_cached = np.array([kv.num_cached_blocks.get(request.id, 0)
                             for request in requests], np.int64)
    num_full = (start[rows] + steps + 1) // bs
    # a row's first completion stores what it has not stored yet, each later one a block
    first = np.maximum(np.where(steps < bs, 0, num_full - 1), first_cached[rows])
    keep = num_full > first
    stored = [(step, row, tuple(tables[row][lo:hi])) for step, row, lo, hi in zip(
        steps[keep].tolist(), rows[keep].tolist(), first[keep].tolist(),
        num_full[keep].tolist(), strict=True)]
    done = sorted(set(rows[keep].tolist()))
    cache_rows(kv, requests, done, [(int(start[row]) + num_steps) // bs for row in done])
    return stored


def cache_rows(kv: BlockTables, requests: list[Request], rows: list[int],
               ends: list[int]) -> None:
    """Cache each row's full blocks up to its end, in one call to the pool (no events)."""
    blocks: list[int] = []
    keys: list[BlockHash] = []
    num_cached, tables, hashes = kv.num_cached_blocks, kv.tables, kv.hasher.hashes
    for row, end in zip(rows, ends, strict=True):
        request = requests[row]
        rid, known = request.id, request.block_hashes  # (hashed so far: most often enough)
        lo = num_cached.get(rid, 0)
        keys += (known if len(known) >= end else hashes(request, end))[lo:end]
        blocks += tables[rid][lo:end]
        num_cached[rid] = end
    kv.pool.cache_blocks(blocks, keys, "", emit=False)
