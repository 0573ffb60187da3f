"""A spilling column (observability/spill.py) reads back exactly what an `array` holding every
value would, whatever the chunk size, and a reader on another thread sees only whole values."""

from __future__ import annotations

import bisect
import errno
import math
import threading
from array import array
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from servescope.observability.spill import Column, Spill

VALUES = {"d": st.floats(allow_nan=True, allow_infinity=True),
          "q": st.integers(-2**63, 2**63 - 1), "I": st.integers(0, 2**32 - 1)}


@st.composite
def operations(draw: st.DrawFn) -> tuple[str, int, list[tuple[str, object]]]:
    typecode = draw(st.sampled_from(sorted(VALUES)))
    value = VALUES[typecode]
    op = st.one_of(st.tuples(st.just("append"), value),
                   st.tuples(st.just("extend"), st.lists(value, max_size=40)),
                   st.tuples(st.just("set_last"), value),
                   st.tuples(st.just("read"), st.integers(-200, 200)),
                   st.tuples(st.just("slice"), st.tuples(st.integers(-200, 200),
                                                         st.integers(-200, 200))))
    return typecode, draw(st.integers(1, 9)), draw(st.lists(op, max_size=60))


@settings(max_examples=150, deadline=None)
@given(operations())
def test_a_spilling_column_reads_what_an_array_holds(tmp_path_factory, case):
    typecode, chunk, ops = case
    spill = Spill(tmp_path_factory.mktemp("spill"), chunk=chunk)
    col, ref = Column(typecode, spill), array(typecode)
    for name, arg in ops:
        if name == "append":
            col.append(arg)  # type: ignore[arg-type]
            ref.append(arg)  # type: ignore[arg-type]
        elif name == "extend":
            col.extend(arg)  # type: ignore[arg-type]
            ref.extend(arg)  # type: ignore[arg-type]
        elif name == "set_last" and ref:
            col[-1] = arg  # type: ignore[assignment]
            ref[-1] = arg  # type: ignore[assignment]
        elif name == "read":
            i = int(arg)  # type: ignore[call-overload]
            if -len(ref) <= i < len(ref):
                assert same(col[i], ref[i])
            else:
                with pytest.raises(IndexError):
                    col[i]
        elif name == "slice":
            lo, hi = arg  # type: ignore[misc]
            assert col[lo:hi].tobytes() == ref[lo:hi].tobytes()
            assert array(typecode, col.iter_range(lo, hi)).tobytes() == ref[lo:hi].tobytes()
        assert len(col) == len(ref)
    assert col.tobytes() == ref.tobytes()
    assert array(typecode, list(col)).tobytes() == ref.tobytes()
    assert col.memory_bytes <= (chunk + 40) * ref.itemsize  # the rest is in the file
    assert spill.size == (len(ref) - len(col._tail)) * ref.itemsize


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 6), max_size=80), st.integers(1, 9),
       st.lists(st.integers(-1, 40), max_size=30))
def test_a_column_that_never_decreases_is_searched_as_bisect_searches_it(
        tmp_path_factory, steps, chunk, xs):
    """bisect_right over chunks (their first values, then one chunk read back) and the tail:
    runs of equal values across chunk boundaries, values before, between and after."""
    col, ref = Column("q", Spill(tmp_path_factory.mktemp("spill"), chunk=chunk)), array("q")
    total = 0
    for step in steps:
        total += step // 3  # many equal values in a row
        col.append(total)
        ref.append(total)
        x = xs[len(ref) % len(xs)] if xs else total
        assert col.bisect_right(x) == bisect.bisect_right(ref, x)
    for x in xs:
        assert col.bisect_right(x) == bisect.bisect_right(ref, x)


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) ==
                                                  math.copysign(1, b))


def test_only_the_last_value_still_in_memory_may_change(tmp_path):
    col = Column("q", Spill(tmp_path, chunk=2))
    col.extend(range(7))
    col[-1] = 70
    assert list(col) == [0, 1, 2, 3, 4, 5, 70]
    with pytest.raises(IndexError, match="spilled"):
        col[0] = 1
    assert not list(tmp_path.iterdir())  # the file has no name: nothing to clean up, ever


def test_a_reader_thread_sees_every_appended_value_whole(tmp_path):
    """The writer appends (spilling every 7 values) while a reader reads each value appended
    so far, as the event loop reads the meter up to the published head."""
    col = Column("q", Spill(tmp_path, chunk=7))
    n, published, wrong = 60_000, [0], []

    def read() -> None:
        k = 0
        while published[0] < n:
            upto = published[0]
            for i in range(k, upto):
                if col[i] != 3 * i:
                    wrong.append((i, col[i]))
            if upto > 40:
                got = col[upto - 40:upto]
                if list(got) != [3 * i for i in range(upto - 40, upto)]:
                    wrong.append((upto, "slice"))
            k = upto

    reader = threading.Thread(target=read)
    reader.start()
    for i in range(n):
        col.append(3 * i)
        published[0] = i + 1
    reader.join()
    assert not wrong


class Interrupted(Spill):
    """A spill that lets a reader in just before each chunk reaches the file, where a thread
    switch may put one."""

    def __init__(self, directory: Path, chunk: int) -> None:
        super().__init__(directory, chunk)
        self.reader = lambda: None

    def write(self, data: bytes) -> int:
        self.reader()
        return super().write(data)


def test_a_reader_during_a_spill_reads_the_chunk_from_memory(tmp_path):
    spill = Interrupted(tmp_path, chunk=4)
    col = Column("q", spill)
    seen: list[list[int]] = []
    spill.reader = lambda: seen.append(list(col))
    for i in range(30):
        col.append(i)
        assert list(col) == list(range(i + 1))
    assert seen == [list(range(n)) for n in (5, 9, 13, 17, 21, 25, 29)]


def test_a_file_that_cannot_be_written_is_an_os_error(tmp_path):
    col = Column("d", Spill(tmp_path / "missing", chunk=2))
    col.extend([1.0, 2.0])
    with pytest.raises(OSError) as err:
        col.append(3.0)
    assert err.value.errno == errno.ENOENT


def test_without_a_spill_a_column_keeps_everything_in_memory():
    col = Column("d")
    col.extend(float(i) for i in range(1000))
    assert col.memory_bytes == 8000 and col[-1] == 999.0 and len(col) == 1000
