"""Shared reading helpers: transparent gzip, a file's head for sniffing, CSV rows by column name,
and field parsers that raise TraceFormatError naming the line and field."""

from __future__ import annotations

import csv
import gzip
import io
import math
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO

from servescope.traces.errors import TraceFormatError, shown

GZIP_MAGIC = b"\x1f\x8b"
HEAD_BYTES = 64 * 1024
MAX_COUNT = 2**31 - 1  # token counts, steps and block ids beyond this are not real traces
# A line of a trace (a request, a CSV row, a recorded step with its block ids) is kilobytes; a
# recorded step of a million-block pool is a few MiB. Longer is not a line but an attack.
MAX_LINE_CHARS = 16 * 1024 * 1024


class _Gzip(gzip.GzipFile):
    """A gzip stream whose damage is a TraceFormatError, like any other bad input."""

    def _guard(name: str):  # type: ignore[no-untyped-def]
        method = getattr(gzip.GzipFile, name)

        def guarded(self, *args):  # type: ignore[no-untyped-def]
            try:
                return method(self, *args)
            except (EOFError, gzip.BadGzipFile, zlib.error) as err:
                raise TraceFormatError(0, "", f"damaged gzip file: {err}") from None
        return guarded

    read = _guard("read")
    read1 = _guard("read1")
    readinto = _guard("readinto")
    readinto1 = _guard("readinto1")
    peek = _guard("peek")
    readline = _guard("readline")
    seek = _guard("seek")
    del _guard


def open_binary(path: Path) -> IO[bytes]:
    """The file's bytes, a gzip file's inflated: exactly once (a gzip inside a gzip is a
    TraceFormatError, not inflated again)."""
    raw = open(path, "rb")  # noqa: SIM115 - returned to the caller, who closes it
    if raw.read(2) != GZIP_MAGIC:
        raw.seek(0)
        return raw
    raw.seek(0)
    inflated = _Gzip(fileobj=raw)
    if inflated.peek(2)[:2] == GZIP_MAGIC:
        inflated.close()
        raw.close()
        raise TraceFormatError(0, "", "a gzip file inside a gzip file: inflate it once "
                                      "and send that")
    return inflated  # type: ignore[return-value]


def open_text(path: Path) -> IO[str]:
    # newline="" so the csv module sees quoted newlines; utf-8-sig drops a BOM.
    return io.TextIOWrapper(open_binary(path), encoding="utf-8-sig", newline="")


def read_head(path: Path, size: int = HEAD_BYTES) -> bytes:
    with open_binary(path) as handle:
        try:
            return handle.read(size)
        except (OSError, EOFError) as err:
            raise TraceFormatError(0, "", f"cannot read file: {err}") from err


def text_lines(handle: IO[str]) -> Iterator[tuple[int, str]]:
    """(1-based line number, line without its newline), with decode errors reported by line."""
    number = 0
    while True:
        try:
            line = handle.readline(MAX_LINE_CHARS + 1)
        except UnicodeDecodeError as err:
            raise TraceFormatError(number + 1, "", "not UTF-8 text") from err
        if not line:
            return
        number += 1
        _check_length(line, number)
        yield number, line.rstrip("\r\n")


def bounded_lines(handle: IO[str]) -> Iterator[str]:
    """The handle's lines, newline kept (what csv.reader reads), none longer than
    MAX_LINE_CHARS."""
    number = 0
    while line := handle.readline(MAX_LINE_CHARS + 1):
        number += 1
        _check_length(line, number)
        yield line


def _check_length(line: str, number: int) -> None:
    if len(line) > MAX_LINE_CHARS:
        raise TraceFormatError(number, "", f"line longer than {MAX_LINE_CHARS:,} characters")


class CsvTable:
    """A CSV file read row by row; columns are found by name (case and spaces ignored)."""

    def __init__(self, handle: IO[str]) -> None:
        self._reader = csv.reader(bounded_lines(handle))
        header = self._next()
        if header is None:
            raise TraceFormatError(1, "", "empty file: no CSV header")
        self.header = [name.strip() for name in header]
        self._index = {_key(name): i for i, name in enumerate(self.header)}

    def column(self, name: str) -> int:
        index = self._index.get(_key(name))
        if index is None:
            raise TraceFormatError(1, name, f"missing column (header: {','.join(self.header)})")
        return index

    def has(self, name: str) -> bool:
        return _key(name) in self._index

    def rows(self) -> Iterator[tuple[int, Sequence[str]]]:
        width = len(self.header)
        while (row := self._next()) is not None:
            if not row:
                continue
            if len(row) != width:
                raise TraceFormatError(self._reader.line_num, "",
                                       f"expected {width} fields, got {len(row)}")
            yield self._reader.line_num, row

    def _next(self) -> list[str] | None:
        try:
            return next(self._reader)
        except StopIteration:
            return None
        except UnicodeDecodeError as err:
            raise TraceFormatError(self._reader.line_num + 1, "", "not UTF-8 text") from err
        except csv.Error as err:
            raise TraceFormatError(self._reader.line_num, "", f"bad CSV: {err}") from err


def _key(name: str) -> str:
    return "".join(name.split()).lower()


def parse_count(text: object, line: int, field: str) -> int:
    """A non-negative whole number of tokens; "12.0" is accepted, "12.5" and "-1" are not."""
    kind = type(text)
    if kind is int:
        value = text
    elif kind is str:
        try:
            value = int(text)  # type: ignore[arg-type]  # the common case, ~3x faster than float
        except ValueError:
            value = _whole(text, line, field)
    else:
        value = _whole(text, line, field)
    if value < 0:  # type: ignore[operator]
        raise TraceFormatError(line, field, f"must not be negative, got {value}")
    if value > MAX_COUNT:  # type: ignore[operator]
        raise TraceFormatError(line, field, f"implausibly large: {value}")
    return value  # type: ignore[return-value]


def _whole(text: object, line: int, field: str) -> int:
    try:
        if isinstance(text, bool):
            raise ValueError
        number = float(text)  # type: ignore[arg-type]
        if not number.is_integer():
            raise ValueError
        return int(number)
    except (TypeError, ValueError, OverflowError):
        raise TraceFormatError(line, field, f"expected a whole number, got {shown(text)}") from None


def parse_seconds(text: object, line: int, field: str) -> float:
    """A finite number (a time); bools and NaN are refused."""
    if isinstance(text, bool):
        raise TraceFormatError(line, field, f"expected a number, got {shown(text)}")
    try:
        value = float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise TraceFormatError(line, field, f"expected a number, got {shown(text)}") from None
    if not math.isfinite(value):
        raise TraceFormatError(line, field, f"expected a finite number, got {shown(text)}")
    return value
