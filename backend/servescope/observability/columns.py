"""Append-only columns the meter keeps per run, compact at trace scale: a histogram's
observations as repeats of equal values (or, for a count made once a step, 4 bytes a record), and
a counter as the records where it changed. Given a `Spill`, each keeps only its newest values
in memory (observability/spill.py)."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from servescope.observability.spill import Column, Spill

ARRAY_REPEATS = 4096  # repeats (or records) a cursor folds at a time: a few MB of observations


def _same(a: float, b: float) -> bool:
    """Equal as floats and in sign (a -0.0 summed is not a 0.0)."""
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


class Repeats:
    """One histogram's observations in the order they were made, as repeats: consecutive equal
    values made in one record are one value and its count (in a decode step every request that
    sampled in the step before has the same inter-token latency): 24 bytes a repeat, where a
    pair of columns costs 16 bytes an observation. Repeats before the record being folded never
    change."""

    __slots__ = ("_last", "_n", "ends", "iters", "values")

    def __init__(self, spill: Spill | None = None) -> None:
        self.iters = Column("q", spill)  # the record each run was made in (non-decreasing)
        self.values = Column("d", spill)
        self.ends = Column("q", spill)  # observations up to and including each run
        self._n = 0  # observations (ends[-1], kept here too: the columns may be in a file)
        self._last: tuple[int, float] | None = None  # (record, value) of the last run

    def __len__(self) -> int:
        return self._n

    def add(self, it: int, value: float, count: int = 1) -> None:
        """`count` observations of `value` made in record `it`."""
        if count <= 0:
            return
        self._n += count
        last = self._last
        if last is not None and last[0] == it and _same(last[1], value):
            self.ends[-1] = self._n
            return
        self.ends.append(self._n)
        self.iters.append(it)
        self.values.append(value)
        self._last = (it, value)

    def add_steps(self, it: int, values: list[float], count: int) -> None:
        """`count` observations of values[k] made in record it + k, for each k: what add()
        makes of them one by one (a run each: no two are in one record), in bulk."""
        if count <= 0 or not values:
            return
        if self._last is not None and self._last[0] == it:  # it may join the record's last
            self.add(it, values[0], count)
            self.add_steps(it + 1, values[1:], count)
            return
        total, num = self._n, len(values)
        self.iters.extend(range(it, it + num))
        self.values.extend(values)
        self.ends.extend(range(total + count, total + count * (num + 1), count))
        self._n += count * num
        self._last = (it + num - 1, values[-1])

    def upto(self, pos: int) -> int:
        """How many runs were made in records up to `pos`."""
        return self.iters.bisect_right(pos)

    def between_arrays(self, lo: int, hi: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(values, numbers of observations) of runs lo..hi - 1, in order, as arrays of
        ARRAY_REPEATS repeats at a time."""
        for a in range(lo, hi, ARRAY_REPEATS):
            b = min(a + ARRAY_REPEATS, hi)
            ends = np.frombuffer(self.ends[max(a - 1, 0):b], np.int64)
            counts = np.diff(ends, prepend=0) if a == 0 else np.diff(ends)
            yield np.frombuffer(self.values[a:b], np.float64), counts

    def expand(self) -> tuple[list[int], list[float]]:
        """(record, value) of every observation, as two lists in the order they were made."""
        iters: list[int] = []
        values: list[float] = []
        start = 0
        for it, value, end in zip(self.iters, self.values, self.ends, strict=True):
            iters += [it] * (end - start)
            values += [value] * (end - start)
            start = end
        return iters, values


class PerRecord:
    """A histogram observed at most once a record with a whole number (tokens a step): 4 bytes
    a record, where a run costs 24 (a step's count seldom equals the one before's)."""

    NONE = 0xFFFFFFFF  # a record without an observation

    __slots__ = ("n", "values")

    def __init__(self, spill: Spill | None = None) -> None:
        self.values = Column("I", spill)  # by record, up to the last observed
        self.n = 0

    def __len__(self) -> int:
        return self.n

    def add(self, it: int, value: float, count: int = 1) -> None:
        if count != 1 or it < len(self.values) or value != int(value):
            raise ValueError(f"one whole number a record: {count} x {value} at record {it}")
        self.values.extend([self.NONE] * (it - len(self.values)))
        self.values.append(int(value))
        self.n += 1

    def add_steps(self, it: int, value: int, num: int) -> None:
        """add(it + k, value) for k in range(num), in bulk."""
        if num > 0:
            self.add(it, value)
            self.values.extend([int(value)] * (num - 1))
            self.n += num - 1

    def upto(self, pos: int) -> int:
        """How many records up to `pos` are kept (those after the last observed have none)."""
        return max(0, min(pos + 1, len(self.values)))

    def between_arrays(self, lo: int, hi: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for a in range(lo, hi, ARRAY_REPEATS):
            values = np.frombuffer(self.values[a:min(a + ARRAY_REPEATS, hi)], np.uint32)
            values = values[values != self.NONE].astype(np.float64)
            yield values, np.ones(len(values), np.int64)

    def expand(self) -> tuple[list[int], list[float]]:
        observed = [(it, float(v)) for it, v in enumerate(self.values) if v != self.NONE]
        return [it for it, _ in observed], [v for _, v in observed]


class Changes:
    """A cumulative counter after each record, kept only where it changed: 16 bytes a change
    (a counter that moves when a request arrives or finishes changes a few times a request,
    where a column costs 8 bytes every record)."""

    __slots__ = ("_value", "iters", "values")

    def __init__(self, spill: Spill | None = None) -> None:
        self.iters = Column("q", spill)
        self.values = Column("d", spill)
        self._value = 0.0  # values[-1] (kept here too: the columns may be in a file)

    def set(self, it: int, value: float) -> None:
        if not _same(self._value, value):
            self.iters.append(it)
            self.values.append(value)
            self._value = value

    def at(self, pos: int) -> float:
        """The value after record `pos` (0.0 before the first change)."""
        k = self.iters.bisect_right(pos)
        return self.values[k - 1] if k else 0.0
