"""The two-list free queue pops, pushes and removes exactly as one ordered queue would."""

from __future__ import annotations

import gc
from collections import OrderedDict

from hypothesis import given, settings
from hypothesis import strategies as st

from servescope.core.free_queue import FreeQueue

ops_st = st.lists(st.tuples(st.sampled_from(["pop", "free", "hit", "reserve"]), st.integers(0, 40),
                            st.booleans()), max_size=120)


class Reference:
    """The queue as one OrderedDict: unhashed blocks move to the head, hashed to the tail."""

    def __init__(self, num_gpu_blocks: int) -> None:
        self.queue: OrderedDict[int, None] = OrderedDict.fromkeys(range(1, num_gpu_blocks))

    def pop(self, n: int) -> list[int]:
        return [self.queue.popitem(last=False)[0] for _ in range(n)]

    def free(self, unhashed: list[int], hashed: list[int]) -> None:
        for block in reversed(unhashed):
            self.queue[block] = None
            self.queue.move_to_end(block, last=False)
        for block in hashed:
            self.queue[block] = None


@settings(max_examples=200, deadline=None)
@given(ops=ops_st, num_gpu_blocks=st.integers(2, 5000))
def test_the_free_queue_is_one_ordered_queue(ops: list, num_gpu_blocks: int) -> None:
    queue, reference = FreeQueue(num_gpu_blocks), Reference(num_gpu_blocks)
    held: list[int] = []  # taken blocks, in the order they were taken
    hashed: set[int] = set()  # free blocks that hold a hash (in the LRU part)
    for op, n, flag in ops:
        if op == "pop":
            n = min(n, len(queue))
            blocks, num_unhashed = queue.pop(n)
            assert blocks == reference.pop(n)
            assert not hashed & set(blocks[:num_unhashed]) and hashed >= set(blocks[num_unhashed:])
            hashed -= set(blocks)
            held += blocks
        elif op == "free" and held:
            freed, held = held[-n - 1:], held[:-n - 1]  # a block table, freed tail first
            with_hash = [b for b in freed if flag != (b % 2 == 0)]
            without = [b for b in freed if b not in with_hash]
            queue.push_head(without)
            queue.push_tail(with_hash)
            reference.free(without, with_hash)
            hashed |= set(with_hash)
        elif op == "hit" and hashed:  # a prefix-cache hit takes a hashed block out of the middle
            block = sorted(hashed)[n % len(hashed)]
            queue.remove_hashed(block)
            del reference.queue[block]
            hashed.discard(block)
            held.append(block)
        elif op == "reserve":  # a contiguous reservation: unhashed free blocks, never taken or not
            unhashed = [b for b in reference.queue if b not in hashed]
            taken = set(unhashed[n // 2::max(1, n // 4)][:n])
            queue.remove_unhashed(taken)
            for block in taken:
                del reference.queue[block]
            held += sorted(taken)
        assert list(queue) == list(reference.queue)
        assert len(queue) == len(reference.queue)
        in_lru = [b for b in reference.queue if b in hashed]  # oldest first, past the gaps
        assert queue.peek_hashed(n // 4, n) == in_lru[n // 4:n]


def test_a_contiguous_reservation_takes_blocks_from_the_stack() -> None:
    queue = FreeQueue(10)
    queue.remove_unhashed({3, 4, 5})
    assert list(queue) == [1, 2, 6, 7, 8, 9] and len(queue) == 6
    assert queue.pop(3) == ([1, 2, 6], 3)


def test_blocks_never_taken_cost_no_list() -> None:
    """A pool's blocks never taken are a range: a pool holds a list item per block it has
    used (Python's collector visits every item of every list it walks)."""
    queue = FreeQueue(1 << 20)
    blocks, num_unhashed = queue.pop(5)
    assert blocks == [1, 2, 3, 4, 5] and num_unhashed == 5
    queue.push_head(blocks[:2])
    assert queue.pop(4) == ([1, 2, 6, 7], 4)
    assert queue.num_unhashed == (1 << 20) - 1 - 7
    held = gc.get_referents(queue)  # (its attributes, or its __dict__ holding them)
    held += [value for item in held if isinstance(item, dict) for value in item.values()]
    lists = [item for item in held if isinstance(item, list)]
    assert lists and sum(map(len, lists)) < 10


def test_the_hashed_list_compacts_and_keeps_its_order() -> None:
    """Past 4,096 popped places the consumed head of the hashed list is dropped; positions of
    blocks still queued (for a hit) stay right."""
    num = 12_000
    queue, reference = FreeQueue(num), Reference(num)
    blocks = reference.pop(num - 1)
    assert queue.pop(num - 1)[0] == blocks
    queue.push_tail(blocks)
    reference.free([], blocks)
    assert queue.pop(7_000)[0] == reference.pop(7_000)  # compacts: 7,000 > 4,096 and > half
    for block in (blocks[7_001], blocks[9_000]):
        queue.remove_hashed(block)
        del reference.queue[block]
    queue.push_tail(blocks[:10])
    reference.free([], blocks[:10])
    assert queue.pop(3_000)[0] == reference.pop(3_000)
    assert list(queue) == list(reference.queue)
