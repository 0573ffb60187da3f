"""The block pool's free queue, kept as two lists and a range so blocks come and go by the slice:

    head -> [unhashed: a stack, last freed first] [never taken: fresh..N-1] [hashed: oldest
    first] <- tail

A block without a hash is pushed at the head (reused first), one with a hash at the tail
(evicted last). Free blocks never gain a hash, so every unhashed free block stays ahead of
every hashed one. A hashed block taken out of the middle (a prefix-cache hit) leaves a -1.
The blocks never taken since the start lie under the stack in the pool's initial order; they
are a range, not a list, so a pool costs memory for the blocks it has used, and Python's
cyclic collector, which visits every item of a list, never walks a large pool's unused part
(a fleet holds dozens of pools at once).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from itertools import islice

GONE = -1  # the place of a block taken out of the middle


class FreeQueue:
    def __init__(self, num_gpu_blocks: int) -> None:
        self._stack: list[int] = []  # freed unhashed blocks, the head at the end
        self._fresh = 1  # the first block never taken: blocks fresh..N-1 lie under the stack
        self._num_gpu_blocks = num_gpu_blocks
        self._lru: list[int] = []  # hashed, oldest at self._lru_head
        self._lru_head = 0
        self._lru_base = 0  # position (since the start) of self._lru[0]
        self._lru_gone = 0
        # each hashed free block's position (stale for the others and for blocks pushed
        # unindexed), indexed by block id: a flat array of C ints, which a push writes with
        # fewer cache misses than a dict
        self._lru_pos = array("q", bytes(8 * num_gpu_blocks))
        self.num_free = num_gpu_blocks - 1

    @property
    def num_unhashed(self) -> int:
        """Free blocks without a hash: taken before any cached block is evicted."""
        return len(self._stack) + self._num_gpu_blocks - self._fresh

    def __len__(self) -> int:
        return self.num_free  # (callers on a hot path read num_free itself)

    def __iter__(self) -> Iterator[int]:
        """Head to tail."""
        yield from reversed(self._stack)
        yield from range(self._fresh, self._num_gpu_blocks)
        yield from (b for b in self._lru[self._lru_head:] if b != GONE)

    def pop(self, n: int) -> tuple[list[int], int]:
        """The n blocks at the head, in order, and how many of them (the first) are unhashed."""
        assert n <= self.num_free, "caller must check num_free_blocks first"
        self.num_free -= n
        stack = self._stack
        k = min(n, len(stack))
        blocks = stack[:-k - 1:-1] if k else []
        del stack[len(stack) - k:]
        fresh = self._fresh
        if n > k and fresh < self._num_gpu_blocks:
            m = min(n - k, self._num_gpu_blocks - fresh)
            blocks += range(fresh, fresh + m)
            self._fresh = fresh + m
            k += m
        if n > k:
            blocks += self._pop_lru(n - k)
        return blocks, k

    def _pop_lru(self, n: int) -> list[int]:
        lru, head = self._lru, self._lru_head
        taken = lru[head:head + n]
        head += n
        while self._lru_gone and GONE in taken:
            missing = taken.count(GONE)
            self._lru_gone -= missing
            taken = [b for b in taken if b != GONE] + lru[head:head + missing]
            head += missing
        if head > 4096 and head > len(lru) // 2:
            del lru[:head]
            self._lru_base += head
            head = 0
        self._lru_head = head
        return taken

    def peek_hashed(self, first: int, end: int) -> list[int]:
        """The hashed free blocks `first`..`end - 1` from the oldest, left in place."""
        head = self._lru_head
        if not self._lru_gone:  # (no gap: just those, not a copy of every hashed block)
            return self._lru[head + first:head + end]
        # the gaps skipped at C speed, from the head (islice would step through the `head`
        # places before it, thousands between compactions) and no further than the end asked for
        lru = self._lru
        kept = filter(GONE.__ne__, map(lru.__getitem__, range(head, len(lru))))
        return list(islice(kept, first, end))

    def push_head(self, blocks: list[int]) -> None:
        """Unhashed blocks, blocks[0] becoming the head."""
        self._stack += reversed(blocks)
        self.num_free += len(blocks)

    def push_tail(self, blocks: list[int], indexed: bool = True) -> None:
        """Hashed blocks, blocks[-1] becoming the tail; `indexed=False` (the caller knows no
        prefix-cache hit can take them, remove_hashed) leaves their positions stale."""
        lru = self._lru
        if indexed:
            pos = self._lru_pos
            for at, block in enumerate(blocks, self._lru_base + len(lru)):
                pos[block] = at
        lru += blocks
        self.num_free += len(blocks)

    def remove_hashed(self, block: int) -> None:
        self._lru[self._lru_pos[block] - self._lru_base] = GONE
        self._lru_gone += 1
        self.num_free -= 1

    def remove_unhashed(self, blocks: set[int]) -> None:
        """Take these blocks out of the stack (one pass, whatever their number)."""
        if max(blocks, default=0) >= self._fresh:  # some never taken: the range made a list
            self._stack[:0] = range(self._num_gpu_blocks - 1, self._fresh - 1, -1)
            self._fresh = self._num_gpu_blocks
        self._stack = [b for b in self._stack if b not in blocks]
        self.num_free -= len(blocks)
