"""A binary buddy allocator over a run of KV blocks: the allocator PagedAttention's authors assume
for Orca (SOSP'23 §6.1, "we assume Orca uses the buddy allocation algorithm").

Every chunk is 2**order blocks and starts at a multiple of its size (offsets from `base`). A run
whose length is not a power of two starts as its largest aligned chunks:

    size 13:  | 8 @0 ........... | 4 @8 ..... | 1 @12 |

`take(order)` splits the smallest free chunk that is big enough (lowest offset first);
`give(first, order)` merges a chunk with its buddy (offset ^ 2**order) while that one is free.
"""

from __future__ import annotations

import bisect


class BuddyArena:
    def __init__(self, base: int, size: int) -> None:
        self.base = base
        self.free: list[list[int]] = [[] for _ in range(max(size.bit_length(), 1))]
        offset = 0
        while offset < size:
            order = (size - offset).bit_length() - 1
            if offset:
                order = min(order, (offset & -offset).bit_length() - 1)
            self.free[order].append(offset)
            offset += 1 << order
        for offsets in self.free:
            offsets.sort()

    @property
    def max_order(self) -> int:
        return len(self.free) - 1

    def take(self, order: int) -> int | None:
        """The first block of a free chunk of 2**order blocks, or None when none is free."""
        for k in range(order, len(self.free)):
            if self.free[k]:
                offset = self.free[k].pop(0)
                while k > order:  # split: keep the lower half, free the upper
                    k -= 1
                    bisect.insort(self.free[k], offset + (1 << k))
                return self.base + offset
        return None

    def give(self, first: int, order: int) -> None:
        offset = first - self.base
        while order < self.max_order:
            buddy = offset ^ (1 << order)
            same = self.free[order]
            index = bisect.bisect_left(same, buddy)
            if index == len(same) or same[index] != buddy:
                break
            del same[index]
            offset = min(offset, buddy)
            order += 1
        bisect.insort(self.free[order], offset)
