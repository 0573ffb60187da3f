"""Azure LLM inference traces, 2023 and 2024 (CSV: TIMESTAMP, ContextTokens, GeneratedTokens).

Timestamps are wall clock with up to 7 fractional digits (which `%f` refuses) and mixed
precision in 2024; rows are streamed, so a 27-million-row week costs a few KiB of memory.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from servescope.core.request import RequestSpec
from servescope.traces._io import CsvTable, open_text, parse_count
from servescope.traces._specs import build_spec
from servescope.traces.errors import TraceFormatError, shown
from servescope.traces.report import TraceReport

COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
_TIMESTAMP = re.compile(
    r"\s*(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?\s*(Z|[+-]\d\d:?\d\d)?\s*$")
_SECOND = re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d")


class TimestampParser:
    """Seconds since an epoch, exact to the digit: whole seconds are parsed once per distinct
    second (consecutive rows share them) and the fraction is added as written. The common
    layout (no zone, no spaces around, 1-9 fractional digits) is read by slicing; any other
    goes through the whole pattern, with the same result."""

    def __init__(self) -> None:
        self._last_base = ""
        self._last_seconds = 0

    def __call__(self, text: str, line: int) -> tuple[int, float]:
        """(whole seconds since 1970 UTC, fraction): kept apart so differences stay exact."""
        fraction = text[20:]
        if text[19:20] == "." and 0 < len(fraction) <= 9 and fraction.isascii() \
                and fraction.isdigit():
            base = text[:19]
            if base == self._last_base or _SECOND.fullmatch(base):
                return self._seconds(base, text, line), float("0." + fraction)
        return self.parse(text, line)

    def parse(self, text: str, line: int) -> tuple[int, float]:
        """__call__ through the whole pattern, for any layout it takes."""
        match = _TIMESTAMP.match(text)
        if match is None:
            raise TraceFormatError(line, "TIMESTAMP",
                                   f"expected 'YYYY-MM-DD HH:MM:SS[.fraction]', got {shown(text)}")
        base, fraction, zone = match.groups()
        seconds = self._seconds(base + (zone or ""), text, line)
        return seconds, (float("0." + fraction) if fraction else 0.0)

    def _seconds(self, key: str, text: str, line: int) -> int:
        if key != self._last_base:
            try:
                moment = datetime.fromisoformat(key.replace("Z", "+00:00"))
            except ValueError as err:
                raise TraceFormatError(line, "TIMESTAMP", f"{err}: {shown(text)}") from None
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)
            self._last_base, self._last_seconds = key, int(moment.timestamp())
        return self._last_seconds


def read(path: Path, report: TraceReport, id_prefix: str = "az") -> Iterator[RequestSpec]:
    with open_text(path) as handle:
        table = CsvTable(handle)
        i_ts, i_in, i_out = (table.column(name) for name in COLUMNS)
        parse_ts = TimestampParser()
        first: tuple[int, float] | None = None
        for index, (line, row) in enumerate(table.rows()):
            whole, fraction = parse_ts(row[i_ts], line)
            if first is None:
                first = whole, fraction
            spec = build_spec(report, f"{id_prefix}{index}",
                              parse_count(row[i_in], line, "ContextTokens"),
                              parse_count(row[i_out], line, "GeneratedTokens"),
                              arrival_s=round((whole - first[0]) + (fraction - first[1]), 7))
            if spec is not None:
                yield spec
