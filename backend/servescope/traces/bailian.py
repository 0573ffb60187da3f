"""Qwen-Bailian usage traces (alibaba-edu/qwen-bailian-usagetraces-anon; the fields as AIPerf's
"Profile with Bailian Traces" page lists them): JSONL rows of `chat_id`, `parent_chat_id` (-1 for
a conversation's first turn), `timestamp` (s), `input_length`, `output_length`, `type`, `turn`
and `hash_ids` (one id per 16-token block; equal ids, equal tokens).

A conversation's turns link through `parent_chat_id`; each request's `session_id` is the
chat_id of its conversation's first turn (a parent not seen before starts a session of its
own). Hash ids become prefix segments as in Mooncake traces (traces/mooncake.py), cut at 16.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from servescope.core.request import RequestSpec
from servescope.traces._io import open_text, parse_count, parse_seconds
from servescope.traces._specs import build_spec, json_lines, require
from servescope.traces.errors import TraceFormatError, shown
from servescope.traces.mooncake import hash_prefix
from servescope.traces.report import TraceReport

HASH_BLOCK_TOKENS = 16  # "16 tokens per block" (the dataset's qwen_*_blksz_16 files)
KEYS = frozenset({"chat_id", "parent_chat_id", "hash_ids"})  # what tells it from Mooncake


def read(path: Path, report: TraceReport, id_prefix: str = "qb") -> Iterator[RequestSpec]:
    root_of: dict[int, int] = {}  # chat_id -> the chat_id its conversation started with
    with open_text(path) as handle:
        first: float | None = None
        for index, (line, row) in enumerate(json_lines(handle)):
            seconds = parse_seconds(require(row, "timestamp", line), line, "timestamp")
            chat = _chat_id(require(row, "chat_id", line), line, "chat_id")
            parent = _chat_id(row.get("parent_chat_id", -1), line, "parent_chat_id")
            root = root_of.get(parent, parent) if parent >= 0 else chat
            root_of[chat] = root
            prompt_len = parse_count(require(row, "input_length", line), line, "input_length")
            output_len = parse_count(require(row, "output_length", line), line, "output_length")
            if first is None:
                first = seconds
            spec = build_spec(
                report, f"{id_prefix}{index}", prompt_len, output_len,
                arrival_s=seconds - first, session_id=str(root),
                prefix=hash_prefix(row.get("hash_ids", []), prompt_len, HASH_BLOCK_TOKENS, line))
            if spec is not None:
                yield spec
        report.meta["num_sessions"] = len(set(root_of.values()))


def _chat_id(value: object, line: int, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TraceFormatError(line, field, f"expected an integer, got {shown(value)}")
    return value
