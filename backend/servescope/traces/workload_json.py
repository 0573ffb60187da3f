"""ServeScope workload JSON: a list of {id, arrival_step | arrival_s, prompt_len, output_len,
priority?, spec_accepted?: [a0, a1, ...], session_id?, shared_prefix?: {id, len} | prefix?: [[key, len],
...]} (the vllm-reference `*.workload.json` shape, or a recording header's `requests`); a
shared prefix becomes the segment ((id, len),). Errors name the line the offending request
starts on."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from servescope.core.request import RequestSpec
from servescope.traces._io import open_text, parse_count, parse_seconds
from servescope.traces._specs import build_spec, require
from servescope.traces.errors import TraceFormatError, shown
from servescope.traces.report import TraceReport

_DECODER = json.JSONDecoder()


def items(text: str) -> Iterator[tuple[int, Any]]:
    """(line, element) of a top-level JSON list, decoded one element at a time."""
    line, seen = 1, 0  # newlines are counted incrementally: a whole-prefix count is quadratic

    def line_at(pos: int) -> int:
        nonlocal line, seen
        line += text.count("\n", seen, pos)
        seen = pos
        return line

    pos = _skip(text, 0)
    if not text.startswith("[", pos):
        raise TraceFormatError(1, "", "expected a JSON list of requests")
    pos = _skip(text, pos + 1)
    if text.startswith("]", pos):
        return
    while True:
        start = line_at(pos)
        try:
            value, pos = _DECODER.raw_decode(text, pos)
        except json.JSONDecodeError as err:
            raise TraceFormatError(err.lineno, "", f"not JSON: {err.msg}") from None
        yield start, value
        pos = _skip(text, pos)
        if text.startswith("]", pos):
            return
        if not text.startswith(",", pos):
            raise TraceFormatError(line_at(pos), "", "expected ',' or ']'")
        pos = _skip(text, pos + 1)


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def read(path: Path, report: TraceReport) -> Iterator[RequestSpec]:
    with open_text(path) as handle:
        try:
            text = handle.read()
        except UnicodeDecodeError as err:
            raise TraceFormatError(0, "", "not UTF-8 text") from err
    yield from _unique(report, items(text))


def read_rows(rows: Any, report: TraceReport | None = None) -> list[RequestSpec]:
    """Rows already parsed (a socket's or a preset's `requests`, a recording header's): the
    same checks as a file, the nth row named as line n."""
    if not isinstance(rows, list):
        raise TraceFormatError(0, "", "expected a JSON list of requests")
    report = report or TraceReport("workload-json", "requests")
    return list(_unique(report, enumerate(rows, start=1)))


def _unique(report: TraceReport, numbered: Iterable[tuple[int, Any]]) -> Iterator[RequestSpec]:
    seen: set[str] = set()
    for line, row in numbered:
        spec = to_spec(report, row, line)
        if spec is None:
            continue
        if spec.id in seen:
            raise TraceFormatError(line, "id", f"duplicate id {shown(spec.id)}")
        seen.add(spec.id)
        yield spec


def to_spec(report: TraceReport, row: Any, line: int) -> RequestSpec | None:
    if not isinstance(row, dict):
        raise TraceFormatError(line, "", "each request must be a JSON object")
    rid = require(row, "id", line)
    if not isinstance(rid, str | int) or isinstance(rid, bool):
        raise TraceFormatError(line, "id", f"expected a string, got {shown(rid)}")
    step = row.get("arrival_step")
    seconds = row.get("arrival_s")
    if step is None and seconds is None:
        raise TraceFormatError(line, "arrival_s", "missing (give arrival_step or arrival_s)")
    prefix = _prefix(row, line)
    spec = build_spec(
        report, str(rid), parse_count(require(row, "prompt_len", line), line, "prompt_len"),
        parse_count(require(row, "output_len", line), line, "output_len"),
        arrival_s=None if seconds is None else _at_least_zero(seconds, line, "arrival_s"),
        arrival_step=None if step is None else parse_count(step, line, "arrival_step"),
        prefix=prefix)
    priority = row.get("priority", 0) or 0
    if not isinstance(priority, int) or isinstance(priority, bool):
        raise TraceFormatError(line, "priority", f"expected an integer, got {shown(priority)}")
    accepted = _spec_accepted(row, line)
    session = row.get("session_id")
    if session is not None and (not isinstance(session, str | int) or isinstance(session, bool)):
        raise TraceFormatError(line, "session_id", f"expected a string, got {shown(session)}")
    if spec is not None and (priority or accepted is not None or session is not None):
        spec = dataclasses.replace(spec, priority=priority, spec_accepted=accepted,
                                   session_id=None if session is None else str(session))
    return spec


def _spec_accepted(row: dict[str, Any], line: int) -> tuple[int, ...] | None:
    """Drafts accepted at each verify step (issue #34): a list of integers >= 0. Each is
    capped at the step's drafts when used, so a value above K accepts them all."""
    accepted = row.get("spec_accepted")
    if accepted is None:
        return None
    if not isinstance(accepted, list):
        raise TraceFormatError(line, "spec_accepted", f"expected a list, got {shown(accepted)}")
    for value in accepted:
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise TraceFormatError(line, "spec_accepted",
                                   f"expected integers >= 0, got {shown(value)}")
    return tuple(accepted)


def _prefix(row: dict[str, Any], line: int) -> tuple[tuple[str, int], ...]:
    if row.get("shared_prefix") is not None:
        shared = row["shared_prefix"]
        if not isinstance(shared, dict):
            raise TraceFormatError(line, "shared_prefix", "expected {id, len}")
        return ((str(require(shared, "id", line)),
                 parse_count(require(shared, "len", line), line, "shared_prefix.len")),)
    segments = row.get("prefix") or []
    if not isinstance(segments, list) or not all(
            isinstance(s, list) and len(s) == 2 for s in segments):
        raise TraceFormatError(line, "prefix", "expected a list of [key, len] pairs")
    return tuple((str(key), parse_count(n, line, "prefix")) for key, n in segments)


def _at_least_zero(value: Any, line: int, field: str) -> float:
    seconds = parse_seconds(value, line, field)
    if seconds < 0:
        raise TraceFormatError(line, field, f"must not be negative, got {seconds}")
    return seconds
