"""vLLM's per-request lifecycle timestamps as JSONL (one request a line: request_id, input_toks,
output_toks, arrival_time, queued_ts, scheduled_ts, first_token_ts, last_token_ts), as
LLMServingSim's bench dumps them: replayed as arrivals, with what was measured kept per request."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from servescope.core.metrics import latency_stats
from servescope.core.request import RequestSpec
from servescope.traces._io import open_text
from servescope.traces._specs import build_spec, json_lines, require
from servescope.traces.errors import TraceFormatError, shown
from servescope.traces.report import TraceReport

FIELDS = ("input_toks", "output_toks", "arrival_time", "queued_ts", "scheduled_ts",
          "first_token_ts", "last_token_ts")
KEYS = frozenset(FIELDS)


def read(path: Path, report: TraceReport) -> Iterator[RequestSpec]:
    """arrival_time is wall-clock and the *_ts stamps are the engine's monotonic clock, so
    latencies are measured from queued_ts (when the engine got the request): ttft = first token
    - queued, e2el = last token - queued, tpot = (last - first) / (output - 1)."""
    rows = _rows(Path(path))
    if not rows:
        raise TraceFormatError(0, "", "no requests in the file")
    start = min(r["arrival_time"] for _, r in rows)
    measured_rows: list[dict[str, float]] = []
    for line, row in sorted(rows, key=lambda item: item[1]["arrival_time"]):
        measured = _measured(row, line)
        spec = build_spec(report, str(row.get("request_id", f"r{line}")),
                          int(row["input_toks"]), int(row["output_toks"]),
                          arrival_s=row["arrival_time"] - start, measured=dict(measured))
        if spec is not None:
            measured_rows.append(measured)
            yield spec
    report.meta["measured_summary"] = measured_summary(measured_rows)
    report.note("measured: vLLM's own per-request stats, timed from when the engine queued "
                "each request")


def _rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    rows = []
    with open_text(path) as handle:
        for line, row in json_lines(handle):
            for key in FIELDS:
                value = require(row, key, line)
                if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                    raise TraceFormatError(line, key, f"must be a non-negative number, "
                                           f"got {shown(value)}")
            rows.append((line, row))
    return rows


def _measured(row: dict[str, Any], line: int) -> dict[str, float]:
    queued, first, last = row["queued_ts"], row["first_token_ts"], row["last_token_ts"]
    if not queued <= row["scheduled_ts"] <= first <= last:
        raise TraceFormatError(line, "first_token_ts", "timestamps out of order (queued <= "
                               "scheduled <= first token <= last token)")
    out = {"ttft_s": first - queued, "e2el_s": last - queued,
           "queue_s": row["scheduled_ts"] - queued}
    if row["output_toks"] > 1:
        out["tpot_s"] = (last - first) / (row["output_toks"] - 1)
    return out


def measured_summary(rows: list[dict[str, float]]) -> dict[str, Any]:
    out: dict[str, Any] = {"completed": len(rows)}
    for key, name in (("ttft_s", "ttft"), ("tpot_s", "tpot"), ("e2el_s", "e2el")):
        out.update(latency_stats(name, [r[key] * 1000.0 for r in rows if key in r]))
    return out
