"""Placeholder holders of unattributed blocks: folding the tables they emit gives exactly the
slots in use after every update, and a step lists at most one chunk per chunk it touches."""

from __future__ import annotations

import random

from servescope.traces.steps_pool import CHUNK, Holders


def fold(tables, new_blocks, released):
    """What a reader does with one record: append new blocks, then drop released tables."""
    for owner, blocks in new_blocks.items():
        tables.setdefault(owner, []).extend(blocks)
    for owner in released:
        del tables[owner]


def held(tables):
    blocks = [b for table in tables.values() for b in table]
    assert len(blocks) == len(set(blocks)), "a block in two tables"
    return set(blocks)


def test_growth_appends_and_a_shrink_relists_only_the_touched_chunk():
    pool, tables = Holders("~kv"), {}
    new_blocks, released = pool.update(range(1, 40), ())
    assert released == () and new_blocks == {"~kv0": tuple(range(1, CHUNK)),
                                             "~kv1": tuple(range(CHUNK, 40))}
    fold(tables, new_blocks, released)
    new_blocks, released = pool.update((), range(35, 40))
    assert released == ("~kv1",) and new_blocks == {"~kv1'": tuple(range(CHUNK, 35))}
    fold(tables, new_blocks, released)
    assert held(tables) == set(range(1, 35))
    new_blocks, released = pool.update((), range(1, 35))  # everything freed: no table left
    fold(tables, new_blocks, released)
    assert tables == {} and new_blocks == {}


def test_random_updates_fold_to_the_slots_in_use():
    rng = random.Random(3)
    pool, tables, in_use = Holders("~cache"), {}, set()
    for _ in range(300):
        removed = rng.sample(sorted(in_use), k=min(len(in_use), rng.randint(0, 5)))
        free = sorted(set(range(1, 200)) - in_use | set(removed))
        added = rng.sample(free, k=rng.randint(0, 6))
        new_blocks, released = pool.update(added, removed)
        in_use = (in_use - set(removed)) | set(added)
        fold(tables, new_blocks, released)
        assert held(tables) == in_use
        touched = {s // CHUNK for s in (*added, *removed)}
        assert sum(map(len, new_blocks.values())) <= CHUNK * len(touched)
