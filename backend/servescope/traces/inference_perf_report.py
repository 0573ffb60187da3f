"""inference-perf's reports read as measured results: its summary (summary_lifecycle_metrics.json)
as a vllm-bench-style summary, and its per-request report (per_request_lifecycle_metrics.json,
written with report.request_lifecycle.per_request) as a request trace whose requests keep what
was measured, shown beside what is simulated."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from servescope.core.request import RequestSpec
from servescope.traces._io import open_text
from servescope.traces._specs import build_spec
from servescope.traces.errors import TraceFormatError
from servescope.traces.report import TraceReport
from servescope.traces.vllm_request_stats import measured_summary

REPORT_NAME = "summary_lifecycle_metrics.json"  # what inference-perf writes beside config.yaml
# inference-perf report metric (seconds) -> vllm bench summary name (ms)
REPORT_METRICS = (("request_latency", "e2el"), ("time_to_first_token", "ttft"),
                  ("inter_token_latency", "itl"), ("time_per_output_token", "tpot"))
PER_REQUEST_KEYS = ("start_time", "end_time", "info")  # RequestLifecycleMetric, as dumped


def attach_measured(report: TraceReport, config_path: Path, given: Path | None) -> None:
    path = given if given is not None else config_path.with_name(REPORT_NAME)
    if given is None and not path.exists():
        return
    report.meta["measured_summary"] = read_report(path)
    report.note(f"measured: inference-perf report {path.name}")


def _json(path: Path) -> Any:
    with open_text(Path(path)) as handle:
        try:
            return json.load(handle)
        except json.JSONDecodeError as err:
            raise TraceFormatError(err.lineno, "", f"not JSON: {err.msg}") from None
        except UnicodeDecodeError:
            raise TraceFormatError(0, "", "not UTF-8 text") from None


def read_report(path: Path) -> dict[str, Any]:
    """A lifecycle-metrics summary (seconds) as a vllm-bench-style summary (ms): mean_/median_/
    p90_/p99_ of e2el, ttft, itl, tpot, and completed. inference-perf's ITL is the gap between
    streamed chunks, which vLLM sends in pairs: about half the per-token time."""
    data = _json(path)
    successes = data.get("successes") if isinstance(data, dict) else None
    if not isinstance(successes, dict) or not isinstance(successes.get("latency"), dict):
        raise TraceFormatError(0, "successes.latency", "missing: not an inference-perf "
                               "lifecycle-metrics report")
    out: dict[str, Any] = {"completed": successes.get("count"),
                           "failed": (data.get("failures") or {}).get("count")}
    for source, name in REPORT_METRICS:
        stats = successes["latency"].get(source)
        if not isinstance(stats, dict):
            continue
        for stat in ("mean", "median", "p90", "p99"):
            if isinstance(stats.get(stat), int | float):
                out[f"{stat}_{name}_ms"] = float(stats[stat]) * 1000.0
    return out


def read(path: Path, report: TraceReport) -> Iterator[RequestSpec]:
    """per_request_lifecycle_metrics.json: a list of {start_time, end_time, request, response,
    info, error}. Arrivals are start_time minus the first; failed requests (an error) are
    skipped and counted. Measured as inference-perf's summarize_requests does: e2el = end -
    start; with streamed token times, ttft = first token - start and tpot = (last - first) /
    (output tokens - 1), output tokens the server's usage.completion_tokens when it sent one."""
    rows = _json(path)
    if not isinstance(rows, list):
        raise TraceFormatError(0, "", "an inference-perf per-request report is a JSON list")
    good = [(i, r) for i, r in enumerate(rows) if _checked(r, i) and not r.get("error")]
    start = min((float(r["start_time"]) for _, r in good), default=0.0)
    measured_rows = []
    for i, row in sorted(good, key=lambda item: item[1]["start_time"]):
        prompt, output, measured = _request(row, i)
        spec = build_spec(report, f"ip{i}", prompt, output,
                          arrival_s=float(row["start_time"]) - start, measured=dict(measured))
        if spec is not None:
            measured_rows.append(measured)
            yield spec
    for _ in range(len(rows) - len(good)):
        report.num_rows += 1
        report.skip("failed")
    report.meta["measured_summary"] = measured_summary(measured_rows)
    report.note("measured: inference-perf's per-request report, timed from each send")


def _checked(row: Any, i: int) -> bool:
    if not isinstance(row, dict):
        raise TraceFormatError(0, f"[{i}]", "each request is an object")
    for key in PER_REQUEST_KEYS:
        if key not in row:
            raise TraceFormatError(0, f"[{i}].{key}", "missing")
    for key in ("start_time", "end_time"):
        value = row[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TraceFormatError(0, f"[{i}].{key}", "must be a number")
    if not isinstance(row["info"], dict):
        raise TraceFormatError(0, f"[{i}].info", "must be an object")
    return True


def _request(row: dict[str, Any], i: int) -> tuple[int, int, dict[str, float]]:
    info = row["info"]
    text = ((info.get("request_metrics") or {}).get("text") or {})
    prompt = text.get("input_tokens", info.get("input_tokens"))
    response = info.get("response_metrics") or {}
    usage = response.get("server_usage") or {}
    output = usage.get("completion_tokens") or response.get("output_tokens")
    for name, value in (("info.request_metrics.text.input_tokens", prompt),
                        ("info.response_metrics.output_tokens", output)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise TraceFormatError(0, f"[{i}].{name}", "must be a whole number of tokens")
    start, end = float(row["start_time"]), float(row["end_time"])
    measured = {"e2el_s": end - start}
    times = response.get("output_token_times") or response.get("chunk_times") or []
    if len(times) > 1 and all(isinstance(t, int | float) for t in (times[0], times[-1])):
        measured["ttft_s"] = float(times[0]) - start
        if output > 1:  # type: ignore[operator]  # a whole number, checked above
            measured["tpot_s"] = (float(times[-1]) - float(times[0])) / (output - 1)  # type: ignore[operator]
    return int(prompt), int(output), measured  # type: ignore[arg-type]  # checked above
