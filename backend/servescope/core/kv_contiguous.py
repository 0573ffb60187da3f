"""Contiguous KV reservations, the allocators PagedAttention replaced (Orca Max, Pow2, Oracle).

Each request reserves one contiguous run of blocks at admission and keeps it to the end:

    | r0 tokens | r0 reserved ...... | gap | r1 tokens | r1 reserved | free ............ |
                                      ^ external fragmentation (free, between reservations)

`max` reserves max_model_len tokens, `pow2` the next power of two of the real length
(prompt + output), `oracle` exactly the real length, known in advance.
"""

from __future__ import annotations

import bisect

from servescope.core.block_pool import BlockPool
from servescope.core.request import Request
from servescope.core.running_batch import RunningBatch

DEFAULT_MAX_LEN = 2048  # Orca (Max) in PagedAttention's Fig. 2 reserves 2048 tokens


class ContiguousKVCacheManager:
    enable_caching = False
    on_demand = False

    def __init__(self, num_gpu_blocks: int, block_size: int, allocator: str,
                 max_model_len: int | None) -> None:
        self.block_size = block_size
        self.allocator = allocator
        self.max_model_len = max_model_len or DEFAULT_MAX_LEN
        self.pool = BlockPool(num_gpu_blocks, enable_caching=False)
        self.tables: dict[str, list[int]] = {}
        self.extents: list[tuple[int, int]] = [(1, num_gpu_blocks - 1)]  # (first block, count)
        self.num_gpu_blocks = num_gpu_blocks
        # Running sums over reservations, for waste() in O(1): slots up to the real length,
        # and slots beyond it (internal fragmentation).
        self._usable_slots = 0
        self._beyond_slots = 0
        self._slots: dict[str, tuple[int, int]] = {}
        self.num_table_blocks = 0

    @property
    def num_free_blocks(self) -> int:
        return self.pool.num_free_blocks

    def reservation_tokens(self, prompt_len: int, output_len: int) -> int:
        real = prompt_len + output_len
        if self.allocator == "max":
            return max(self.max_model_len, real)
        if self.allocator == "pow2":
            return 1 << (real - 1).bit_length()
        return real

    def get_computed_blocks(self, request: Request) -> list[int]:
        return []

    def cache_full_blocks(self, request: Request, num_tokens: int) -> None:
        """Contiguous reservations are never shared, so nothing is cached."""

    def allocate_slots(self, request: Request, num_new_tokens: int,
                       computed: list[int] | None = None, reserve_full: bool = False,
                       watermark: bool = False) -> list[int] | None:
        if request.id in self.tables:
            return []  # the reservation made at admission already covers every token
        tokens = self.reservation_tokens(request.prompt_len, request.output_len)
        return self.reserve(request, tokens)

    def reserve(self, request: Request, num_tokens: int) -> list[int] | None:
        """First fit: the lowest run of free blocks long enough for `num_tokens`."""
        count = -(-num_tokens // self.block_size)
        for index, (first, length) in enumerate(self.extents):
            if length >= count:
                if length == count:
                    del self.extents[index]
                else:
                    self.extents[index] = (first + count, length - count)
                blocks = list(range(first, first + count))
                for block in blocks:
                    del self.pool.free_queue[block]
                    self.pool.ref_cnt[block] = 1
                self.tables[request.id] = blocks
                self._count(request, len(blocks) * self.block_size, +1)
                self.num_table_blocks += len(blocks)
                return blocks
        return None

    def _count(self, request: Request, slots: int, sign: int) -> None:
        real = request.prompt_len + request.output_len
        usable, beyond = min(slots, real), max(slots - real, 0)
        if sign > 0:
            self._slots[request.id] = (usable, beyond)
        else:
            usable, beyond = self._slots.pop(request.id)
        self._usable_slots += sign * usable
        self._beyond_slots += sign * beyond

    def free(self, request: Request) -> None:
        blocks = self.tables.pop(request.id, None)
        if not blocks:
            return
        self.pool.free_blocks(blocks[::-1])
        self._release(blocks[0], len(blocks))
        self._count(request, 0, -1)
        self.num_table_blocks -= len(blocks)

    def _release(self, first: int, count: int) -> None:
        index = bisect.bisect(self.extents, (first, 0))
        self.extents.insert(index, (first, count))
        merged: list[tuple[int, int]] = []
        for start, length in self.extents[max(index - 1, 0):index + 2]:
            if merged and merged[-1][0] + merged[-1][1] == start:
                merged[-1] = (merged[-1][0], merged[-1][1] + length)
            else:
                merged.append((start, length))
        self.extents[max(index - 1, 0):index + 2] = merged

    def waste(self, running: RunningBatch) -> dict[str, int]:
        """Token slots by PagedAttention Fig. 2 category, over the memory in use (up to the
        highest reserved block; free runs below it are external fragmentation)."""
        states = running.total_computed()
        reserved = self._usable_slots - states
        internal = self._beyond_slots
        last_first, last_len = self.extents[-1] if self.extents else (0, 0)
        top = last_first if last_first + last_len == self.num_gpu_blocks else self.num_gpu_blocks
        in_use = (top - 1) * self.block_size
        external = max(in_use - states - reserved - internal, 0)
        return {"token_states": states, "reserved": reserved,
                "internal_fragmentation": internal, "external_fragmentation": external}
