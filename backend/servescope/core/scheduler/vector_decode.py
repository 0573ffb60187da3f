"""The vector path of a V1 step: a run of running requests that each decode one token.

Same decisions as taking them one by one: each row gets one token; a row whose computed
tokens fill its last block takes one new block, in row order, from the free-queue head; a
block that this token completes is cached. It stops before the first row that cannot get a
block, which the per-request path then handles (with preemption).
"""

from __future__ import annotations

import numpy as np

from servescope.core.kv_cache_manager import KVCacheManager
from servescope.core.running_batch import RunningBatch
from servescope.core.scheduler.base import DecodeChunk, SchedulerOutput

MIN_ROWS = 8  # below this the per-request path is as fast


def plain_decode_mask(batch_len: int, prompt_len: np.ndarray, num_output: np.ndarray,
                      num_computed: np.ndarray) -> np.ndarray:
    """Rows whose only uncomputed token is the last sampled one."""
    n = batch_len
    mask: np.ndarray = (prompt_len[:n] + num_output[:n] - num_computed[:n]) == 1
    return mask


def schedule_chunk(kv: KVCacheManager, output: SchedulerOutput, running: RunningBatch,
                   mask: np.ndarray, index: int, budget: int) -> int:
    """Schedule rows index.. while they are plain decodes; returns how many were taken."""
    tail = mask[index:len(running)]
    stop = len(tail) if tail.all() else int(np.argmin(tail))
    count = min(stop, budget)
    if count < 1:
        return 0
    block_size = kv.block_size
    num_computed = running.num_computed[index:index + count]
    if kv.on_demand:
        crossing = (num_computed % block_size == 0).nonzero()[0]
    else:  # a contiguous reservation already covers every token
        crossing = np.zeros(0, np.int64)
    free = kv.num_free_blocks
    if len(crossing) > free:
        count = int(crossing[free])
        crossing = crossing[:free]
        if count < 1:
            return 0
        num_computed = num_computed[:count]
    start = num_computed.copy()
    completing = (((start + 1) % block_size == 0).nonzero()[0] if kv.enable_caching
                  else np.zeros(0, np.int64))
    _allocate_and_cache(kv, output, running, index, crossing, completing, start)
    num_computed += 1
    output.entries.append(DecodeChunk(index, index + count,
                                      running.ids[index:index + count], start))
    return count


def _allocate_and_cache(kv: KVCacheManager, output: SchedulerOutput, running: RunningBatch,
                        index: int, crossing: np.ndarray, completing: np.ndarray,
                        start: np.ndarray) -> None:
    """Per row in order: take its new block, then cache the block its token completes."""
    if not len(crossing) and not len(completing):
        return
    if not len(completing):  # no cache events to interleave: take all blocks at once
        rids = [running.requests[index + row].id for row in crossing.tolist()]
        for rid, block in zip(rids, kv.append_blocks(rids), strict=True):
            output.new_blocks[rid] = (block,)
        return
    needs = set(crossing.tolist())
    for row in sorted(needs | set(completing.tolist())):
        request = running.requests[index + row]
        if row in needs:
            output.new_blocks[request.id] = tuple(kv.append_blocks([request.id]))
        if (start[row] + 1) % kv.block_size == 0 and kv.enable_caching:
            kv.cache_full_blocks(request, int(start[row]) + 1)
