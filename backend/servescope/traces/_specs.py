"""Building RequestSpecs from parsed rows (empty requests are skipped and counted), and reading
JSON lines with errors that name the line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO, Any

from servescope.core.request import RequestSpec
from servescope.traces._io import text_lines
from servescope.traces.errors import TraceFormatError
from servescope.traces.report import TraceReport


def build_spec(report: TraceReport, rid: str, prompt_len: int, output_len: int,
               arrival_s: float | None = None, arrival_step: int | None = None,
               prefix: tuple[tuple[str, int], ...] = (),
               measured: dict[str, object] | None = None,
               session_id: str | None = None) -> RequestSpec | None:
    """A spec, or None (counted in report.skipped) when the request has no prompt or output."""
    report.num_rows += 1
    if prompt_len < 1:
        report.skip("zero_prompt")
        return None
    if output_len < 1:
        report.skip("zero_output")
        return None
    report.num_yielded += 1
    return RequestSpec(rid, prompt_len, output_len, arrival_step=arrival_step,
                       arrival_s=arrival_s, prefix=prefix, measured=measured,
                       session_id=session_id)


def json_lines(handle: IO[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; anything but a JSON object is an error."""
    for number, line in text_lines(handle):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as err:
            raise TraceFormatError(number, "", f"not JSON: {err.msg} at column {err.colno}")\
                from None
        if not isinstance(value, dict):
            raise TraceFormatError(number, "", "expected a JSON object on each line")
        yield number, value


def require(row: dict[str, Any], key: str, line: int) -> Any:
    if key not in row:
        raise TraceFormatError(line, key, "missing")
    return row[key]
