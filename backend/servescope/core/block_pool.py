"""The physical KV block pool: free queue, ref counts, prefix-cache map and the events they raise.

Free queue (block 0 is the null block and is never in it):

    head -> [freed unhashed blocks, newest first] [initial order 1..N-1] [hashed, LRU] <- tail

Allocation pops the head, so freed blocks without a hash are reused first (LIFO); blocks with a
hash go to the tail and are evicted last (LRU). A cached block loses its hash only when it is
handed out again.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable

from servescope.core.records import BlockEvent

NULL_BLOCK = 0
BlockHash = int | tuple[int, str, int]  # see prefix.BlockHasher


class BlockPool:
    def __init__(self, num_gpu_blocks: int, enable_caching: bool) -> None:
        self.num_gpu_blocks = num_gpu_blocks
        self.enable_caching = enable_caching
        self.ref_cnt = [0] * num_gpu_blocks
        self.block_hash: list[BlockHash | None] = [None] * num_gpu_blocks
        self.free_queue: OrderedDict[int, None] = OrderedDict.fromkeys(range(1, num_gpu_blocks))
        # hash -> its block, or its copies in order (a dict) once there are two: most hashes
        # have one copy, which then costs no dict of its own
        self.cached: dict[BlockHash, int | dict[int, None]] = {}
        self.events: list[BlockEvent] = []
        self.freed: list[int] = []

    @property
    def num_usable_blocks(self) -> int:
        return self.num_gpu_blocks - 1

    @property
    def num_free_blocks(self) -> int:
        return len(self.free_queue)

    def get_new_blocks(self, n: int, evicted: list[int] | None = None) -> list[int]:
        """Pop n blocks off the head; those that held a hash leave the prefix cache, with a
        'removed' event each (or, given `evicted`, listed there for the caller to report)."""
        assert n <= len(self.free_queue), "caller must check num_free_blocks first"
        pop = self.free_queue.popitem
        blocks = [pop(last=False)[0] for _ in range(n)]
        ref_cnt, block_hash, cached = self.ref_cnt, self.block_hash, self.cached
        gone = []
        for block in blocks:
            ref_cnt[block] = 1
            old = block_hash[block]
            if old is not None:
                copies = cached[old]
                if isinstance(copies, int):
                    del cached[old]
                else:
                    del copies[block]
                    if len(copies) == 1:
                        cached[old] = next(iter(copies))
                block_hash[block] = None
                gone.append(block)
        if evicted is not None:
            evicted += gone
        elif gone:
            new = tuple.__new__  # BlockEvent's own __new__ costs a Python call per block
            self.events += [new(BlockEvent, ("removed", (block,), None)) for block in gone]
        return blocks

    def touch(self, blocks: Iterable[int]) -> None:
        """Take a reference on prefix-cache hits, pulling free ones out of the free queue."""
        for block in blocks:
            if self.ref_cnt[block] == 0:
                del self.free_queue[block]
            self.ref_cnt[block] += 1

    def free_blocks(self, ordered: list[int]) -> None:
        """Drop one reference from each block; `ordered` is a block table reversed (tail first)."""
        ref_cnt = self.ref_cnt
        for block in ordered:
            ref_cnt[block] -= 1
        released = [b for b in ordered if ref_cnt[b] == 0 and b != NULL_BLOCK]
        self.freed += released
        block_hash, free_queue = self.block_hash, self.free_queue
        unhashed = [b for b in released if block_hash[b] is None]
        for block in reversed(unhashed):
            free_queue[block] = None
            free_queue.move_to_end(block, last=False)
        if len(unhashed) < len(released):
            for block in released:
                if block_hash[block] is not None:
                    free_queue[block] = None

    def cache_blocks(self, blocks: list[int], hashes: list[BlockHash], request_id: str,
                     emit: bool = True) -> None:
        """Give full blocks their hashes; `emit=False` leaves the 'stored' event to the caller
        (a decode run, whose records say which step stored what)."""
        cached = self.cached
        for block, block_hash in zip(blocks, hashes, strict=True):
            self.block_hash[block] = block_hash
            copies = cached.get(block_hash)
            if copies is None:
                cached[block_hash] = block
            elif isinstance(copies, int):
                cached[block_hash] = {copies: None, block: None}
            else:
                copies[block] = None
        if emit:
            self.events.append(BlockEvent("stored", tuple(blocks), request_id))

    def lookup(self, block_hash: BlockHash) -> int | None:
        """The first cached copy of this hash, or None."""
        copies = self.cached.get(block_hash)
        if copies is None or isinstance(copies, int):
            return copies
        return next(iter(copies))

    def copies(self, block_hash: BlockHash) -> list[int]:
        copies = self.cached.get(block_hash)
        if copies is None:
            return []
        return [copies] if isinstance(copies, int) else list(copies)

    def drain(self) -> tuple[list[BlockEvent], list[int]]:
        events, freed = self.events, self.freed
        self.events, self.freed = [], []
        return events, freed
