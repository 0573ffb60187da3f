"""Every trace format by name, detection from a file's first bytes (an explicit format always
wins), and one entry point that opens a file as a RequestSpec or StepRecord stream."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from servescope.traces import (
    azure,
    bailian,
    burstgpt,
    inference_perf,
    inference_perf_report,
    mooncake,
    sharegpt,
    splitwise,
    steps_iteration_log,
    steps_kv_events,
    steps_servescope,
    vllm_bench,
    vllm_request_stats,
    workload_json,
)
from servescope.traces._io import open_text, read_head, text_lines
from servescope.traces.errors import TraceFormatError
from servescope.traces.options import TraceOptions, apply_options
from servescope.traces.report import TraceReport

SCAN_LOG_LINES = 200_000  # how far detection looks for the first Iteration(N) line of a log


@dataclass(frozen=True)
class Format:
    name: str
    kind: str  # "requests" or "steps"
    read: Callable[..., Iterator[Any]]
    description: str


FORMATS = {f.name: f for f in (
    Format("azure", "requests", azure.read, "Azure LLM inference 2023/2024 CSV"),
    Format("burstgpt", "requests", burstgpt.read, "BurstGPT v1/v3 CSV"),
    Format("mooncake", "requests", mooncake.read, "Mooncake / timed-trace JSONL"),
    Format("bailian", "requests", bailian.read, "Qwen-Bailian usage trace JSONL (chat turns)"),
    Format("splitwise", "requests", splitwise.read, "SplitwiseSim or Vidur request CSV"),
    Format("sharegpt-stats", "requests", sharegpt.read, "ShareGPT length statistics CSV"),
    Format("vllm-bench", "requests", vllm_bench.read, "vllm bench serve result JSON/JSONL"),
    Format("vllm-request-stats", "requests", vllm_request_stats.read,
           "vLLM per-request lifecycle stats JSONL (queued, scheduled, first/last token)"),
    Format("inference-perf", "requests", inference_perf.read,
           "inference-perf config YAML (load stages, data lengths)"),
    Format("inference-perf-requests", "requests", inference_perf_report.read,
           "inference-perf per_request_lifecycle_metrics.json (measured per request)"),
    Format("workload-json", "requests", workload_json.read, "ServeScope workload JSON list"),
    Format("servescope-steps", "steps", steps_servescope.read, "ServeScope step recording"),
    Format("vllm-iteration-log", "steps", steps_iteration_log.read,
           "vLLM --enable-logging-iteration-details log"),
    Format("vllm-kv-events", "steps", steps_kv_events.read, "vLLM KV-event msgpack capture"),
)}

CSV_COLUMNS = (  # (format, columns that must all be in the header), most specific first
    ("azure", {"timestamp", "contexttokens", "generatedtokens"}),
    ("burstgpt", {"timestamp", "requesttokens", "responsetokens"}),
    ("splitwise", {"arrival_timestamp", "prompt_size", "token_size"}),
    ("splitwise", {"arrived_at", "num_prefill_tokens", "num_decode_tokens"}),
    ("sharegpt-stats", {"num_prefill_tokens", "num_decode_tokens"}),
)
BENCH_KEYS = ('"input_lens"', '"start_times"', '"request_throughput"', '"ttfts"')


def detect(path: Path) -> str:
    """The format's name, or TraceFormatError when nothing matches (then pass a format)."""
    head = read_head(Path(path))
    if not head.strip():
        raise TraceFormatError(0, "", "empty file")
    if head[0] in range(0x80, 0xA0) or head[0] in (0xDC, 0xDD, 0xDE, 0xDF):
        return "vllm-kv-events"  # msgpack array/map; never the first byte of UTF-8 text
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    found = _sniff_json(text) or _sniff_yaml(text) or _sniff_csv(text) or _sniff_log(path, text)
    if found is None:
        raise TraceFormatError(0, "", "cannot detect the trace format; name it (one of: "
                               f"{', '.join(FORMATS)})")
    return found


def _sniff_json(text: str) -> str | None:
    stripped = text.lstrip()
    if stripped.startswith("["):
        if all(f'"{key}"' in text for key in inference_perf_report.PER_REQUEST_KEYS):
            return "inference-perf-requests"
        return "workload-json" if '"prompt_len"' in text or stripped[1:].strip() in ("", "]") \
            else None
    if not stripped.startswith("{"):
        return None
    first, newline, _ = stripped.partition("\n")
    keys: set[str] = set()
    if newline:
        try:
            value = json.loads(first)
            keys = set(value) if isinstance(value, dict) else set()
            if isinstance(value, dict) and value.get("format") == steps_servescope.FORMAT:
                return "servescope-steps"
        except json.JSONDecodeError:
            pass
    if '"servescope-steps"' in first:
        return "servescope-steps"
    if {"timestamp", "input_length", "output_length"} <= keys:
        return "bailian" if bailian.KEYS <= keys else "mooncake"
    if vllm_request_stats.KEYS <= keys or vllm_request_stats.DUMP_KEYS <= keys:
        return "vllm-request-stats"
    if any(key in text for key in BENCH_KEYS):
        return "vllm-bench"
    if {"step", "scheduled"} <= keys:
        raise TraceFormatError(1, "format", "step records without a servescope-steps header line")
    return None


def _sniff_yaml(text: str) -> str | None:
    """inference-perf configs are YAML mappings with top-level `load:` and `data:` keys."""
    lines = {line.split(":", 1)[0] for line in text.splitlines() if not line.startswith((" ", "#"))}
    return "inference-perf" if {"load", "data"} <= lines else None


def _sniff_csv(text: str) -> str | None:
    header = {"".join(name.split()).lower() for name in text.splitlines()[0].split(",")}
    for name, columns in CSV_COLUMNS:
        if columns <= header:
            return name
    return None


def _sniff_log(path: Path, text: str) -> str | None:
    if steps_iteration_log.MARKER in text:
        return "vllm-iteration-log"
    with open_text(path) as handle:
        try:
            for number, line in text_lines(handle):
                if steps_iteration_log.MARKER in line and "context requests" in line:
                    return "vllm-iteration-log"
                if number > SCAN_LOG_LINES:
                    break
        except TraceFormatError:
            return None
    return None


def load(path: Path, report: TraceReport, options: TraceOptions | None = None,
         **params: Any) -> Iterator[Any]:
    """The records of `path` in the format `report.format` (detected when it is not a format
    name); request streams get `options` applied. `params` go to the adapter."""
    path = Path(path)
    if report.format not in FORMATS:
        report.format = detect(path)
    fmt = FORMATS[report.format]
    report.kind = fmt.kind
    stream = fmt.read(path, report, **params)
    if fmt.kind == "requests" and options is not None:
        return apply_options(stream, options)
    if fmt.kind == "steps" and options is not None and options != TraceOptions():
        raise ValueError("time window, scaling and sampling apply to request traces only")
    return stream


def draw_params(fmt: str, count: int | None, rate_per_s: float | None,
                seed: int | None) -> dict[str, Any]:
    """What a format without arrival times (sharegpt-stats) takes from the load options: it
    draws `count` requests (sample or limit; else its default) at `rate_per_s`. An
    inference-perf config takes the seed (for its wall-clock base_seed) and, for a load.sweep,
    the saturation rate as `rate_per_s`."""
    if fmt == "inference-perf":
        return {"seed": seed, "saturation_rate_per_s": rate_per_s}
    if fmt != "sharegpt-stats":
        return {}
    params: dict[str, Any] = {"seed": seed, "rate_per_s": rate_per_s}
    if count is not None:
        params["num_requests"] = count
    return params


def count_params(fmt: str, max_requests: int | None,
                 window_s: tuple[float, float | None] | None) -> dict[str, Any]:
    """What a format that generates its requests (an inference-perf load profile) takes to
    count them before generating any: the cap and the window they are counted in."""
    if fmt != "inference-perf" or max_requests is None:
        return {}
    return {"max_requests": max_requests, "window_s": window_s}


def open_trace(path: Path, fmt: str | None = None, options: TraceOptions | None = None,
               **params: Any) -> tuple[TraceReport, Iterator[Any]]:
    """(report, stream): the report fills in as the stream is consumed."""
    if fmt is not None and fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    report = TraceReport(fmt or "", "")
    return report, load(path, report, options, **params)
