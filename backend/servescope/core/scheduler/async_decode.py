"""The vector path under async scheduling: runs of running requests that each decode one token
while their previous token may still be in flight (one placeholder).

Same decisions as the per-request path. Scheduling: a row whose computed tokens fill its last
block takes a new block, in row order; the blocks its known tokens fill are cached then (up to
start + 1 - placeholders). Update: each row samples its token, resolves its placeholder and
caches the block that token's step completed.
"""

from __future__ import annotations

from typing import TypeGuard

import numpy as np

from servescope.core.kv_cache_manager import KVCacheManager
from servescope.core.request import Request, RequestStatus
from servescope.core.running_batch import RunningBatch
from servescope.core.scheduler.base import DecodeChunk, SchedulerOutput

# Unlike the synchronous path (vector_decode.MIN_ROWS), a run of even one row is cheaper here
# than the per-request path (batches of 5-20 at the Azure trace's load): bench/async_speed.py
# --run-ahead 19365, async/sync 1.16 and 1.15 with 1 against 1.18 and 1.18 with 8
MIN_ROWS = 1


def plain_decode_mask(batch: RunningBatch) -> np.ndarray:
    """Rows with exactly one token to schedule whose last token is not already in flight."""
    n = len(batch)
    computed, placeholders = batch.num_computed[:n], batch.num_placeholders[:n]
    total = batch.prompt_len[:n] + batch.output_len[:n]
    last_in_flight = (placeholders > 0) & (computed + 2 - placeholders >= total)
    mask: np.ndarray = ((batch.prompt_len[:n] + batch.num_output[:n] + placeholders - computed
                         == 1) & ~last_in_flight)
    return mask


def schedule_chunk(kv: KVCacheManager, output: SchedulerOutput, running: RunningBatch,
                   mask: np.ndarray, index: int, budget: int) -> int:
    """Schedule rows index.. while they are plain decodes; returns how many were taken."""
    tail = mask[index:len(running)]
    count = min(len(tail) if tail.all() else int(np.argmin(tail)), budget)
    if count < 1:
        return 0
    # (plain Python over the rows: a batch is small, and numpy calls cost more than its rows)
    size, hi = kv.block_size, index + count
    start = running.num_computed[index:hi].tolist()
    crossing = [row for row, p in enumerate(start) if p % size == 0] if kv.on_demand else []
    if len(crossing) > kv.num_free_blocks:  # stop before the first row without a block
        count = crossing[kv.num_free_blocks]
        crossing, hi = crossing[:kv.num_free_blocks], index + count
        del start[count:]
        if count < 1:
            return 0
    known = [p + 1 - h for p, h in zip(start, running.num_placeholders[index:hi].tolist(),
                                       strict=True)]
    caching = ([row for row, k in enumerate(known) if k % size == 0] if kv.enable_caching
               else [])
    needs = set(crossing)
    for row in sorted(needs.union(caching)):
        request = running.requests[index + row]
        if row in needs:
            output.new_blocks[request.id] = tuple(kv.append_blocks([request.id]))
        if known[row] % size == 0 and kv.enable_caching:
            kv.cache_full_blocks(request, known[row])
    running.num_computed[index:hi] += 1
    output.entries.append(DecodeChunk(index, hi, running.ids[index:hi], np.array(start, np.int64)))
    return count


def update_chunk(kv: KVCacheManager, running: RunningBatch, requests: list[Request],
                 start: np.ndarray, iteration: int) -> list[Request]:
    """The tokens of a chunk whose requests all still run; the finished, in row order."""
    slots = np.fromiter((r.slot for r in requests), np.int64, len(requests))
    broken = slots[running.stretch_start[slots] + running.stretch_len[slots] != iteration]
    for slot in broken.tolist():
        running.close_stretch(slot)
        running.stretch_start[slot] = iteration
    running.stretch_len[slots] += 1
    running.num_output[slots] += 1
    running.num_placeholders[slots] -= 1
    if kv.enable_caching:
        for row in ((start + 1) % kv.block_size == 0).nonzero()[0].tolist():
            kv.cache_full_blocks(requests[row], int(start[row]) + 1)
    done = (running.num_output[slots] >= running.output_len[slots]).nonzero()[0]
    return [requests[row] for row in done.tolist()]


def all_running(requests: list[Request | None]) -> TypeGuard[list[Request]]:
    """Every row's request still runs (none finished or preempted since it was scheduled)."""
    return all(r is not None and r.status is RequestStatus.RUNNING for r in requests)
