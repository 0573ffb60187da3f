"""vLLM's per-request stats as JSONL, one finished request a line: the fields of vLLM 0.33's
`RequestStateStats` (vllm/v1/metrics/stats.py) with the request's id and `num_prompt_tokens`
(FinishedRequestStats' name), replayed as arrivals with what was measured kept per request.
LLMServingSim's bench dumps the same stamps under other names (input_toks, output_toks, no
first_token_latency); they are read too, and say what they lack."""

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

STAMPS = ("arrival_time", "queued_ts", "scheduled_ts", "first_token_ts", "last_token_ts")
FIELDS = ("num_prompt_tokens", "num_generation_tokens", *STAMPS, "first_token_latency")
KEYS = frozenset(FIELDS)
# LLMServingSim's names for the two counts; its dumps have no first_token_latency
DUMP_NAMES = {"input_toks": "num_prompt_tokens", "output_toks": "num_generation_tokens"}
DUMP_KEYS = frozenset((*DUMP_NAMES, *STAMPS))


def read(path: Path, report: TraceReport) -> Iterator[RequestSpec]:
    """vLLM times TTFT and E2E from the request's arrival (IterationStats.update_from_output:
    first_token_latency = now - arrival_time, wall clock); the *_ts stamps are the engine
    core's monotonic clock, so only their differences mean anything: ttft = first_token_latency,
    e2el = ttft + (last - first token), queue = scheduled - queued, tpot = (last - first) /
    (generated - 1), as vLLM's mean_time_per_output_token."""
    rows = _rows(Path(path))
    if not rows:
        raise TraceFormatError(0, "", "no requests in the file")
    start = min(r["arrival_time"] for _, r in rows)
    from_arrival = all("first_token_latency" in r for _, r in rows)
    measured_rows: list[dict[str, float]] = []
    for line, row in sorted(rows, key=lambda item: item[1]["arrival_time"]):
        measured = _measured(row, line)
        spec = build_spec(report, str(row.get("request_id", f"r{line}")),
                          int(row["num_prompt_tokens"]), int(row["num_generation_tokens"]),
                          arrival_s=row["arrival_time"] - start, measured=dict(measured))
        if spec is not None:
            measured_rows.append(measured)
            yield spec
    report.meta["measured_summary"] = measured_summary(measured_rows)
    report.note("measured: vLLM's own per-request stats, timed from each request's arrival"
                if from_arrival else
                "measured: vLLM's per-request stamps without first_token_latency (an "
                "LLMServingSim dump): TTFT and E2E timed from queued_ts, not from arrival as "
                "vLLM times them")


def _rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    rows = []
    with open_text(path) as handle:
        for line, raw in json_lines(handle):
            row = {DUMP_NAMES.get(key, key): value for key, value in raw.items()}
            present = [k for k in FIELDS if k != "first_token_latency" or k in row]
            for key in present:
                value = require(row, key, line)
                if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                    raise TraceFormatError(line, _name(raw, key), "must be a non-negative "
                                           f"number, got {shown(value)}")
            rows.append((line, row))
    return rows


def _name(raw: dict[str, Any], key: str) -> str:
    """The field's name as the file spells it."""
    return next((old for old, new in DUMP_NAMES.items() if new == key and old in raw), key)


def _measured(row: dict[str, Any], line: int) -> dict[str, float]:
    queued, first, last = row["queued_ts"], row["first_token_ts"], row["last_token_ts"]
    if not queued <= row["scheduled_ts"] <= first <= last:
        raise TraceFormatError(line, "first_token_ts", "timestamps out of order (queued <= "
                               "scheduled <= first token <= last token)")
    ttft = row.get("first_token_latency", first - queued)
    out = {"ttft_s": ttft, "e2el_s": ttft + (last - first),
           "queue_s": row["scheduled_ts"] - queued}
    if row["num_generation_tokens"] > 1:
        out["tpot_s"] = (last - first) / (row["num_generation_tokens"] - 1)
    return out


def measured_summary(rows: list[dict[str, float]]) -> dict[str, Any]:
    out: dict[str, Any] = {"completed": len(rows)}
    for key, name in (("ttft_s", "ttft"), ("tpot_s", "tpot"), ("e2el_s", "e2el")):
        out.update(latency_stats(name, [r[key] * 1000.0 for r in rows if key in r]))
    return out
