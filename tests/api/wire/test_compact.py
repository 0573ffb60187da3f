"""Compact keyframe columns: runs and ranges expand to exactly the column they came from, and
are used only where they are shorter."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from servescope.api.wire.compact import expand, ranges, ranges_each, runs

values = st.lists(st.one_of(st.none(), st.integers(0, 3), st.sampled_from(["x", "y"])),
                  max_size=60)


@given(values)
def test_runs_expand_to_the_column(column):
    packed = runs(column)
    assert expand(packed) == column
    if isinstance(packed, dict):
        assert len(packed["runs"]) < len(column)


@given(st.lists(st.integers(0, 40), max_size=60))
def test_ranges_expand_to_the_ids(ids):
    packed = ranges(ids)
    assert expand(packed) == ids
    if isinstance(packed, dict):
        assert len(packed["ranges"]) < len(ids)


def test_long_runs_and_stretches_are_compacted():
    assert runs([None] * 1000 + [3] * 5) == {"runs": [None, 1000, 3, 5]}
    assert ranges(list(range(100, 400)) + [7]) == {"ranges": [100, 300, 7, 1]}
    assert runs([0, 1, 0, 1]) == [0, 1, 0, 1] and ranges([5, 3]) == [5, 3]
    assert runs([1, True, 1.0]) == [1, True, 1.0]  # equal in Python, not on the wire


@given(st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 60)), min_size=5, max_size=40))
def test_long_id_lists_compact_to_one_pair_per_stretch(parts):
    """Lists long enough for numpy's path (a keyframe's cached blocks) and shorter ones."""
    ids = [b for first, count in parts for b in range(first, first + count)]
    num_stretches = 1 + sum(b != a + 1 for a, b in zip(ids, ids[1:], strict=False))
    packed = ranges(ids)
    assert expand(packed) == ids
    assert packed == ids if 2 * num_stretches >= len(ids) else (
        len(packed["ranges"]) == 2 * num_stretches)


stretches = st.lists(st.tuples(st.integers(0, 500), st.integers(1, 30)), max_size=6).map(
    lambda parts: [b for first, count in parts for b in range(first, first + count)])


@given(st.lists(st.one_of(st.lists(st.integers(0, 40), max_size=60), stretches), max_size=8))
def test_ranges_of_many_lists_at_once_are_each_lists_ranges(lists):
    """A keyframe's block tables, compacted together by numpy."""
    assert ranges_each(lists) == [ranges(ids) for ids in lists]
    assert [expand(packed) for packed in ranges_each(lists)] == lists
