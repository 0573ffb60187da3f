"""Append-only numeric columns that keep their newest values in memory and the rest in a file.

The meter's per-record columns and observations grow with the run: at a million requests a run
has tens of millions of records, about 80 bytes each in memory. A column given a `Spill` writes
each full chunk of values to that file (anonymous: it never outlives the process, and nothing
is left to clean up) and keeps only the chunk being filled, so a track's meter holds a bounded
amount of memory whatever the run's length. Values read back are the bytes written: exact.

One thread appends (the track's); others may read what was appended before they ask (the event
loop, up to the published head): a reader takes the (chunks spilled, chunk being filled) pair
as one snapshot, and the writer replaces that pair only after the chunk is in the file.
"""

from __future__ import annotations

import os
import sys
import tempfile
from array import array
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any, overload

CHUNK = 16_384  # values a column keeps in memory before writing them out (128 KiB of doubles)


class Spill:
    """The file a meter's columns write their full chunks to, opened on the first write."""

    def __init__(self, directory: Path, chunk: int | None = None) -> None:
        self.directory = directory
        self.chunk = CHUNK if chunk is None else chunk
        if self.chunk < 1:
            raise ValueError("chunk must be at least 1")
        self._file: IO[bytes] | None = None
        self._end = 0

    def write(self, data: bytes) -> int:
        """Append `data`; the offset it starts at. OSError when the directory cannot hold it."""
        if self._file is None:
            self._file = tempfile.TemporaryFile(dir=self.directory, prefix="meter-")
        offset = self._end
        written = os.pwrite(self._file.fileno(), data, offset)
        if written != len(data):
            raise OSError(f"wrote {written} of {len(data)} bytes to the meter's file")
        self._end += written
        return offset

    def read(self, offset: int, size: int) -> bytes:
        assert self._file is not None, "nothing was written"
        return os.pread(self._file.fileno(), size, offset)

    @property
    def size(self) -> int:
        """Bytes in the file."""
        return self._end


class Column:
    """An `array` of one typecode that is only appended to (and its last value changed); with
    a `Spill`, all but its newest values live in the spill's file."""

    __slots__ = ("_firsts", "_limit", "_offsets", "_read", "_spill", "_tail", "_view",
                 "typecode")

    def __init__(self, typecode: str, spill: Spill | None = None) -> None:
        self.typecode = typecode
        self._spill = spill
        self._limit = spill.chunk if spill is not None else sys.maxsize  # values kept in memory
        self._offsets: list[int] = []  # file offset of each spilled chunk
        self._firsts: list[float] = []  # and its first value (bisect_right's index)
        self._read: tuple[int, array[Any]] = (-1, array(typecode))  # the last chunk read back
        self._tail: array[Any] = array(typecode)  # the values after the spilled chunks
        self._view = (0, self._tail)  # what readers see: (chunks spilled, tail), swapped whole

    @property
    def itemsize(self) -> int:
        return self._tail.itemsize

    @property
    def memory_bytes(self) -> int:
        """Bytes of values held in memory (the file's are not)."""
        return len(self._tail) * self._tail.itemsize

    def __len__(self) -> int:
        n, tail = self._view
        return n * self._chunk + len(tail)

    @property
    def _chunk(self) -> int:
        return self._spill.chunk if self._spill is not None else 0

    def append(self, value: float) -> None:
        tail = self._tail
        tail.append(value)
        if len(tail) > self._limit:
            self._spill_full()

    def extend(self, values: Iterable[float]) -> None:
        tail = self._tail
        tail.extend(values)
        if len(tail) > self._limit:
            self._spill_full()

    def _spill_full(self) -> None:
        """Write out full chunks, keeping at least the last value (which may still change)."""
        assert self._spill is not None
        tail, chunk = self._tail, self._spill.chunk
        k = (len(tail) - 1) // chunk * chunk
        for lo in range(0, k, chunk):
            self._offsets.append(self._spill.write(tail[lo:lo + chunk].tobytes()))
            self._firsts.append(tail[lo])
        self._tail = array(self.typecode, tail[k:])
        self._view = (len(self._offsets), self._tail)

    @overload
    def __getitem__(self, index: int) -> float: ...
    @overload
    def __getitem__(self, index: slice) -> array[Any]: ...

    def __getitem__(self, index: int | slice) -> float | array[Any]:
        n, tail = self._view
        base = n * self._chunk
        length = base + len(tail)
        if isinstance(index, slice):
            lo, hi, step = index.indices(length)
            if step != 1:
                raise ValueError("a column is sliced with step 1 only")
            return self._range(lo, max(lo, hi), base, tail)
        i = index + length if index < 0 else index
        if not 0 <= i < length:
            raise IndexError("column index out of range")
        if i >= base:
            return tail[i - base]
        return self._range(i, i + 1, base, tail)[0]

    def _range(self, lo: int, hi: int, base: int, tail: array[Any]) -> array[Any]:
        out: array[Any] = array(self.typecode)
        size, chunk = out.itemsize, self._chunk
        while lo < min(hi, base):
            c, at = divmod(lo, chunk)
            stop = min(hi, base, (c + 1) * chunk)
            assert self._spill is not None
            out.frombytes(self._spill.read(self._offsets[c] + at * size, (stop - lo) * size))
            lo = stop
        if hi > lo:
            out += tail[lo - base:hi - base]
        return out

    def __setitem__(self, index: int, value: float) -> None:
        """Change a value still in memory (the meter changes only the last one)."""
        n, tail = self._view
        i = index + len(self) if index < 0 else index
        if i < n * self._chunk:
            raise IndexError("a spilled value cannot change")
        tail[i - n * self._chunk] = value

    def iter_range(self, lo: int, hi: int) -> Iterator[float]:
        """Values lo..hi - 1 (clamped as a slice is), a chunk at a time: no copy of the range."""
        n, tail = self._view
        chunk = self._chunk
        base = n * chunk
        lo, hi, _ = slice(lo, hi).indices(base + len(tail))
        while lo < hi:
            stop = min(hi, (lo // chunk + 1) * chunk) if lo < base else hi
            yield from self._range(lo, stop, base, tail)
            lo = stop

    def bisect_right(self, x: float) -> int:
        """How many values are <= x, in a column whose values never decrease: a search of the
        chunks' first values, then of one chunk (the last one read is kept) or the tail."""
        n, tail = self._view
        chunk = self._chunk
        if not n or (tail and x >= tail[0]):
            return n * chunk + bisect_right(tail, x)
        c = bisect_right(self._firsts, x, 0, n)
        if not c:
            return 0
        c -= 1
        read_c, values = self._read
        if read_c != c:
            values = self._range(c * chunk, (c + 1) * chunk, n * chunk, tail)
            self._read = (c, values)
        return c * chunk + bisect_right(values, x)

    def tobytes(self) -> bytes:
        return self[:].tobytes()

    def __iter__(self) -> Iterator[float]:
        return self.iter_range(0, len(self))
