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
from servescope.core.scheduler.base import DecodeChunk, DecodeMask, SchedulerOutput

# Unlike the synchronous path (vector_decode.MIN_ROWS), a run of even one row is cheaper here
# than the per-request path (batches of 5-20 at the Azure trace's load): bench/async_speed.py
# --run-ahead 19365, async/sync 1.16 and 1.15 with 1 against 1.18 and 1.18 with 8
MIN_ROWS = 1


def plain_decode_mask(batch: RunningBatch) -> list[bool]:
    """Rows with exactly one token to schedule whose last token is not already in flight
    (plain Python: a batch is small, and numpy calls cost more than its rows)."""
    n = len(batch)
    rows = zip(batch.prompt_len[:n].tolist(), batch.output_len[:n].tolist(),
               batch.num_output[:n].tolist(), batch.num_computed[:n].tolist(),
               batch.num_placeholders[:n].tolist(), strict=True)
    return [prompt + num_output + held - computed == 1
            and not (held > 0 and computed + 2 - held >= prompt + output_len)
            for prompt, output_len, num_output, computed, held in rows]


def schedule_chunk(kv: KVCacheManager, output: SchedulerOutput, running: RunningBatch,
                   mask: DecodeMask, index: int, budget: int) -> int:
    """Schedule rows index.. while they are plain decodes; returns how many were taken."""
    end = min(len(running), index + budget)
    assert isinstance(mask, list)  # (plain_decode_mask's)
    try:  # the first row from `index` that is not a plain decode
        hi = mask.index(False, index, end)
    except ValueError:
        hi = end
    if hi <= index:
        return 0
    size = kv.block_size
    start = running.num_computed[index:hi].tolist()
    crossing = [row for row, p in enumerate(start) if p % size == 0] if kv.on_demand else []
    if len(crossing) > kv.num_free_blocks:  # stop before the first row without a block
        count = crossing[kv.num_free_blocks]
        crossing, hi = crossing[:kv.num_free_blocks], index + count
        del start[count:]
        if count < 1:
            return 0
    caching = []  # rows whose known tokens (the ones not in flight) fill their last block
    if kv.enable_caching:
        held = running.num_placeholders[index:hi].tolist()
        caching = [(row, p + 1 - h) for row, (p, h) in enumerate(zip(start, held, strict=True))
                   if (p + 1 - h) % size == 0]
    if crossing or caching:
        _allocate_and_cache(kv, output, running.requests[index:hi], crossing, caching)
    running.num_computed[index:hi] += 1
    output.entries.append(DecodeChunk(index, hi, running.ids[index:hi], np.array(start, np.int64)))
    return hi - index


def _allocate_and_cache(kv: KVCacheManager, output: SchedulerOutput, requests: list[Request],
                        crossing: list[int], caching: list[tuple[int, int]]) -> None:
    """Per row in order: take its new block, then cache the blocks its known tokens fill."""
    known = dict(caching)
    needs = set(crossing)
    for row in sorted(needs.union(known)):
        request = requests[row]
        if row in needs:
            output.new_blocks[request.id] = tuple(kv.append_blocks([request.id]))
        if row in known:
            kv.cache_full_blocks(request, known[row])


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
