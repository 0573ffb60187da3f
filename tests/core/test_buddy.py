"""The buddy allocator behind the contiguous (Orca-style) KV reservations."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from servescope.core.buddy import BuddyArena


def _chunks(arena: BuddyArena) -> set[tuple[int, int]]:
    return {(offset, order) for order, offsets in enumerate(arena.free) for offset in offsets}


def test_a_run_that_is_not_a_power_of_two_starts_as_its_largest_aligned_chunks() -> None:
    assert _chunks(BuddyArena(1, 13)) == {(0, 3), (8, 2), (12, 0)}  # 8 + 4 + 1 blocks


def test_take_splits_the_smallest_fitting_chunk_and_give_merges_buddies() -> None:
    arena = BuddyArena(1, 16)
    assert arena.take(0) == 1  # 16 -> 8 + 4 + 2 + 1 + [1]
    assert _chunks(arena) == {(1, 0), (2, 1), (4, 2), (8, 3)}
    assert arena.take(1) == 3  # the free pair at offset 2, no further split
    arena.give(1, 0)  # its buddy (offset 1) is free: merge to a pair, whose buddy is taken
    assert _chunks(arena) == {(0, 1), (4, 2), (8, 3)}
    arena.give(3, 1)
    assert _chunks(arena) == {(0, 4)}


def test_free_blocks_split_across_non_buddies_do_not_make_a_bigger_chunk() -> None:
    arena = BuddyArena(1, 8)
    _, b, c, _ = (arena.take(1) for _ in range(4))
    assert b is not None and c is not None
    arena.give(b, 1)
    arena.give(c, 1)  # 4 blocks free, but as two pairs from different quads
    assert arena.take(2) is None
    assert arena.take(1) is not None


@given(st.integers(1, 300), st.lists(st.tuples(st.booleans(), st.integers(0, 9)), max_size=80))
def test_chunks_stay_aligned_disjoint_and_merge_back(size: int,
                                                     ops: list[tuple[bool, int]]) -> None:
    arena = BuddyArena(5, size)
    initial = _chunks(arena)
    held: list[tuple[int, int]] = []
    for take, n in ops:
        if take or not held:
            fits = any(arena.free[k] for k in range(n, len(arena.free)))
            first = arena.take(n)
            assert (first is not None) == fits
            if first is not None:
                held.append((first - 5, n))
        else:
            offset, order = held.pop(n % len(held))
            arena.give(offset + 5, order)
        spans = sorted([*held, *_chunks(arena)])
        assert sum(1 << order for _, order in spans) == size
        assert all(offset % (1 << order) == 0 for offset, order in spans)
        assert all(a + (1 << k) <= b for (a, k), (b, _) in zip(spans, spans[1:], strict=False))
    for offset, order in held:
        arena.give(offset + 5, order)
    assert _chunks(arena) == initial
