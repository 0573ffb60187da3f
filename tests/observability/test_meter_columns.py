"""The meter's compact columns give back exactly what was put in: runs of observations in
order (equal values in different records, or of different sign, stay apart), a once-a-record
count with records between that have none, and a counter's value after any record."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from servescope.observability.columns import Changes, PerRecord, Repeats

VALUES = st.sampled_from([0.0, -0.0, 0.5, 0.5000000000000001, 2.0, math.inf])


@given(st.lists(st.tuples(st.integers(0, 3), VALUES)))
def test_runs_expand_to_what_was_added(steps):
    runs = Repeats()
    expected: list[tuple[int, float]] = []
    it = 0
    for gap, value in steps:
        it += gap % 2  # several observations per record, and records in order
        runs.add(it, value)
        expected.append((it, value))
    iters, values = runs.expand()
    assert list(zip(iters, values, strict=True)) == expected
    assert [math.copysign(1.0, v) for v in values] == [math.copysign(1.0, v) for _, v in expected]
    assert len(runs) == len(expected)
    for pos in range(-1, it + 2):
        made = runs.ends[runs.upto(pos) - 1] if runs.upto(pos) else 0
        assert made == sum(1 for i, _ in expected if i <= pos)


def test_equal_values_of_one_record_are_one_run_and_of_two_are_two():
    runs = Repeats()
    for it, value in [(0, 1.5), (0, 1.5), (0, 1.5), (1, 1.5), (1, 2.0), (1, 1.5)]:
        runs.add(it, value)
    assert list(runs.iters) == [0, 1, 1, 1]
    assert list(runs.ends) == [3, 4, 5, 6]


@given(st.lists(st.tuples(st.integers(1, 3), st.sampled_from([0.0, 1.0, 2.0, 7.0]))))
def test_changes_read_back_the_value_after_each_record(steps):
    changes = Changes()
    after: list[float] = []
    total = 0.0
    for k, (_, delta) in enumerate(steps):
        total += delta
        changes.set(k, total)
        after.append(total)
    assert changes.at(-1) == 0.0
    assert [changes.at(k) for k in range(len(after))] == after
    assert len(changes.iters) == sum(1 for _, d in steps if d)


@given(st.lists(st.tuples(st.integers(1, 3), st.integers(0, 5000))))
def test_a_count_per_record_reads_back_with_the_records_that_have_none(steps):
    kept = PerRecord()
    expected: list[tuple[int, float]] = []
    it = -1
    for gap, value in steps:
        it += gap
        kept.add(it, value)
        expected.append((it, float(value)))
    iters, values = kept.expand()
    assert list(zip(iters, values, strict=True)) == expected and len(kept) == len(expected)
    for pos in range(-2, it + 3):
        made = [(float(v), int(c)) for values, counts in kept.between_arrays(0, kept.upto(pos))
                for v, c in zip(values, counts, strict=True)]
        assert made == [(v, 1) for i, v in expected if i <= pos]


def test_a_second_count_in_one_record_or_a_fraction_is_refused():
    kept = PerRecord()
    kept.add(3, 7)
    for it, value in ((3, 8), (2, 1), (5, 1.5)):
        with pytest.raises(ValueError):
            kept.add(it, value)


@given(st.lists(st.tuples(st.integers(0, 2), st.lists(VALUES, max_size=6), st.integers(0, 3))))
def test_steps_added_in_bulk_keep_what_adding_them_one_by_one_keeps(batches):
    """Repeats.add_steps and PerRecord.add_steps (a decode stretch's steps,
    api/records/stretch_pack.py) give the columns add() gives, byte for byte, also where a batch
    starts in the record last added to."""
    bulk, one, kept_bulk, kept_one = Repeats(), Repeats(), PerRecord(), PerRecord()
    after = 0  # the record after the last batch's
    for gap, values, count in batches:
        it = max(after - 1 if gap == 0 else after + gap - 1, 0)  # 0: in the last one's record
        bulk.add_steps(it, values, count)
        for k, value in enumerate(values):
            one.add(it + k, value, count)
        if it >= len(kept_one.values):
            kept_bulk.add_steps(it, count, len(values))
            for k in range(len(values)):
                kept_one.add(it + k, count)
        after = max(after, it + len(values))
    for mine, theirs in ((bulk, one), (kept_bulk, kept_one)):
        assert [a.tobytes() for a in vars_of(mine)] == [a.tobytes() for a in vars_of(theirs)]
        assert len(mine) == len(theirs)


def vars_of(kept: Repeats | PerRecord) -> list:
    return [kept.values] if isinstance(kept, PerRecord) else [kept.iters, kept.values, kept.ends]
