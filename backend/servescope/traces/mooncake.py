"""Mooncake / timed-trace JSONL: `timestamp` (ms), `input_length`, `output_length`, `hash_ids`.

Each hash id names one 512-token block of the prompt; equal ids mean equal tokens. They become
prefix segments ("h:<id>", 512), the last one trimmed to the prompt, so the simulator re-cuts
them into its own block size: with 16-token blocks one shared hash id is 32 shared blocks.
vLLM's `--dataset-name timed_trace`, GenAI-Perf and guidellm read the same format. An optional
`session_id` (AIPerf's multi-turn Mooncake rows, docs/benchmark-modes/trace-replay.md) becomes
the request's `session_id`; the FAST'25 traces carry none (their turns show as shared hash ids).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from servescope.core.request import RequestSpec
from servescope.traces._io import open_text, parse_count, parse_seconds
from servescope.traces._specs import build_spec, json_lines, require
from servescope.traces.errors import TraceFormatError, shown
from servescope.traces.report import TraceReport

HASH_BLOCK_TOKENS = 512


def read(path: Path, report: TraceReport, id_prefix: str = "mc",
         hash_block_tokens: int = HASH_BLOCK_TOKENS) -> Iterator[RequestSpec]:
    with open_text(path) as handle:
        first: float | None = None
        for index, (line, row) in enumerate(json_lines(handle)):
            ms = parse_seconds(require(row, "timestamp", line), line, "timestamp")
            prompt_len = parse_count(require(row, "input_length", line), line, "input_length")
            output_len = parse_count(require(row, "output_length", line), line, "output_length")
            prefix = hash_prefix(row.get("hash_ids", []), prompt_len, hash_block_tokens, line)
            if first is None:
                first = ms
            spec = build_spec(report, f"{id_prefix}{index}", prompt_len, output_len,
                              arrival_s=(ms - first) / 1000.0, prefix=prefix,
                              session_id=session_of(row, line))
            if spec is not None:
                yield spec


def session_of(row: dict[str, Any], line: int) -> str | None:
    value = row.get("session_id")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise TraceFormatError(line, "session_id", f"expected a string, got {shown(value)}")
    return str(value)


def hash_prefix(hash_ids: Any, prompt_len: int, block_tokens: int,
                line: int) -> tuple[tuple[str, int], ...]:
    """(("h:<id0>", 512), ("h:<id1>", 512), ..., ("h:<idk>", rest)): blocks past the prompt
    are dropped; a prompt longer than its hash ids is unique after them."""
    if not isinstance(hash_ids, list):
        raise TraceFormatError(line, "hash_ids", "expected a list of block hash ids")
    segments = []
    remaining = prompt_len
    for hash_id in hash_ids:
        if remaining <= 0:
            break
        if isinstance(hash_id, bool) or not isinstance(hash_id, int | str):
            raise TraceFormatError(line, "hash_ids", f"expected integer ids, got {shown(hash_id)}")
        length = min(block_tokens, remaining)
        segments.append((f"h:{hash_id}", length))
        remaining -= length
    return tuple(segments)
