"""The routers' prefix indexes (core/routers/prefix_index.py) on hand-made sends and KV events:
llm-d's approximate indexer (approximateprefix/indexer.go: an LRU per replica) and its greedy
matchLongestPrefix (approximateprefix/plugin.go), and the precise index from KV events."""

from collections import OrderedDict

import numpy as np

from servescope.core.routers.prefix_index import ApproxIndex, EventIndex


def test_the_lru_forgets_a_replicas_oldest_hashes():
    index = ApproxIndex(2)
    index.add(0, [1, 2, 3], capacity=3)
    index.add(0, [4], capacity=3)  # 1 is the oldest: gone
    assert index.match([1, 2, 3]) == [0, 0]  # the walk stops at the first block nobody holds
    assert index.match([2, 3, 4]) == [3, 0]


def test_using_a_hash_again_makes_it_recent():
    index = ApproxIndex(1)
    index.add(0, [1, 2], capacity=2)
    index.add(0, [1], capacity=2)  # 1 is now newer than 2
    index.add(0, [5], capacity=2)  # so 2 goes
    assert index.match([1]) == [1] and index.match([2]) == [0]


def test_the_walk_counts_every_holder_until_a_block_nobody_holds():
    # replica 0 holds blocks 1, 2; replica 1 holds 1 and 3: block 2 is held (by 0), so the
    # walk reaches block 3 and counts it for replica 1 too; llm-d's greedy count
    index = ApproxIndex(3)
    index.add(0, [1, 2], capacity=10)
    index.add(1, [1, 3], capacity=10)
    assert index.match([1, 2, 3, 4]) == [2, 2, 0]


def test_kv_events_store_and_remove_copies():
    index = EventIndex(2)
    index.apply(1, "stored", (7, 8))
    index.apply(1, "stored", (7,))  # a second copy of 7
    index.apply(1, "removed", (7,))
    assert index.match([7, 8]) == [0, 2]
    index.apply(1, "removed", (7,))
    assert index.match([7, 8]) == [0, 0]
    index.apply(0, "removed", (9,))  # a block stored before the router listened: ignored
    assert index.match([9]) == [0, 0]


def plain_lru_add(lru: OrderedDict, hashes: list[int], capacity: int) -> None:
    """The reference: an LRU that adds one hash at a time and evicts its oldest while over."""
    for h in hashes:
        lru[h] = None
        lru.move_to_end(h)
        while len(lru) > capacity:
            lru.popitem(last=False)


def test_the_index_is_an_lru_evicting_after_each_hash_as_indexer_go_does():
    """Random sends (repeats, hashes sent twice in one prompt, a capacity that changes) held
    against a plain LRU that adds one hash at a time and evicts its oldest while over."""
    rng = np.random.default_rng(11)
    index, lrus = ApproxIndex(3), [OrderedDict() for _ in range(3)]
    for _ in range(400):
        replica, capacity = int(rng.integers(3)), int(rng.integers(1, 40))
        hashes = rng.integers(1, 60, int(rng.integers(0, 25))).tolist()
        index.add(replica, hashes, capacity)
        plain_lru_add(lrus[replica], hashes, capacity)
        for h in range(1, 60):
            assert index.match([h]) == [int(h in lru) for lru in lrus]


def test_own_hashes_take_lru_room_in_their_place_though_the_index_keeps_no_name_for_them():
    """Sends that end in own hashes (negative: one request's private blocks, core/prefix.py;
    fresh in every send) held against the plain LRU that stores them like any other: the
    same shared hashes stay, as the LRU's capacity counts the own ones in their order."""
    rng = np.random.default_rng(12)
    index, lrus = ApproxIndex(2), [OrderedDict() for _ in range(2)]
    fresh = -1
    for _ in range(600):
        replica, capacity = int(rng.integers(2)), int(rng.integers(1, 50))
        hashes = rng.integers(1, 40, int(rng.integers(0, 12))).tolist()
        for _ in range(int(rng.integers(0, 30))):  # the own tail
            hashes.append(fresh)
            fresh -= 1
        index.add(replica, hashes, capacity)
        plain_lru_add(lrus[replica], hashes, capacity)
        for h in range(1, 40):
            assert index.match([h]) == [int(h in lru) for lru in lrus]


def plain_walk(hashes: list[int], holders: dict[int, set[int]]) -> dict[int, int]:
    """The reference matchLongestPrefix: walk until a block nobody holds, count each holder."""
    counts: dict[int, int] = {}
    for h in hashes:
        if not holders.get(h):
            break
        for replica in holders[h]:
            counts[replica] = counts.get(replica, 0) + 1
    return counts


def test_the_walk_over_holder_masks_counts_as_the_plain_walk_on_any_fleet_size():
    """Random KV events on fleets past a machine word (replica 100 is bit 100 of its hash's
    mask), walks whose blocks have the same holders all the way and walks whose holders
    change, against the plain walk over sets."""
    rng = np.random.default_rng(13)
    for num_replicas in (1, 3, 64, 130):
        index, holders = EventIndex(num_replicas), {}
        for _ in range(300):
            replica, kind = int(rng.integers(num_replicas)), ("stored", "removed")[
                int(rng.integers(2))]
            hashes = tuple(rng.integers(1, 12, int(rng.integers(1, 6))).tolist())
            index.apply(replica, kind, hashes)
            copies = index.copies[replica]
            for h in hashes:  # who holds what, from the index's own copy counts
                holders.setdefault(h, set()).discard(replica)
                if copies[h]:
                    holders[h].add(replica)
            walk = rng.integers(1, 12, int(rng.integers(0, 8))).tolist()
            assert index.matched(walk) == plain_walk(walk, holders)
            assert index.match(walk) == [plain_walk(walk, holders).get(r, 0)
                                         for r in range(num_replicas)]


def test_a_walk_of_one_holder_set_and_one_that_changes_holders():
    index = EventIndex(100)
    for replica in (3, 70, 99):
        index.apply(replica, "stored", (1, 2, 3))
    assert index.matched([1, 2, 3, 4]) == {3: 3, 70: 3, 99: 3}
    index.apply(70, "removed", (3,))
    assert index.matched([1, 2, 3]) == {3: 3, 70: 2, 99: 3}
    index.apply(3, "removed", (1,))  # held by 70 and 99 still: the walk goes on
    assert index.matched([1, 2, 3]) == {3: 2, 70: 2, 99: 3}
