"""Turns a `configure` message's workload (preset, uploaded trace, synthetic, explicit requests,
saved scenario) into request specs or a recorded step stream, within the server's limits."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from servescope import presets
from servescope.core.config import ConfigError, EngineConfig
from servescope.core.request import RequestSpec
from servescope.traces import registry
from servescope.traces.errors import TraceFormatError
from servescope.traces.report import TraceReport

DEMO: dict[str, Any] = {
    "title": "Demo: 48 requests, mixed prompt lengths",
    "description": "Short chats and a few long documents share a 512-token budget; watch chunked "
                   "prefill split the long prompts while decodes keep flowing.",
    "config": {"block_size": 16, "num_gpu_blocks": 513, "max_num_seqs": 32,
               "max_num_batched_tokens": 512, "enable_prefix_caching": True},
    "workload": {"generators": [
        {"seed": 7, "num_requests": 36, "id_prefix": "chat", "arrival": {"rate_per_s": 30},
         "prompt_len": [32, 384], "output_len": [16, 120]},
        {"seed": 8, "num_requests": 12, "id_prefix": "doc", "arrival": {"rate_per_s": 9},
         "prompt_len": [1024, 3072], "output_len": [24, 64]},
    ]},
}


class WorkloadError(ValueError):
    """A workload the server cannot use; `code` is the protocol's error code."""

    def __init__(self, message: str, field: str | None = None, code: str = "workload") -> None:
        super().__init__(message)
        self.field = field
        self.code = code


@dataclass
class Workload:
    base_config: dict[str, Any]
    specs: list[RequestSpec]
    preset: str | None = None
    records: list[dict[str, Any]] | None = None  # a recorded run to replay
    trace: dict[str, Any] | None = None  # what the uploaded file says about itself (trace_info)


def list_presets() -> list[dict[str, Any]]:
    built_in = {"name": "demo", "title": DEMO["title"], "description": DEMO["description"],
                "verdict": None}
    return [built_in, *(p for p in presets.list_presets() if p["name"] != "demo")]


def preset_workload(name: str) -> Workload:
    if name == "demo" and not (presets.PRESET_DIR / "demo.json").is_file():
        specs = [s for g in DEMO["workload"]["generators"] for s in presets.generate(g)]
        return Workload(dict(DEMO["config"]), specs, preset="demo")
    if not name.replace("-", "").replace("_", "").isalnum():
        raise WorkloadError(f"no preset {name!r}", "preset")
    try:
        config, specs, _ = presets.load_preset(name)
    except presets.PresetError as err:
        raise WorkloadError(str(err), "preset") from err
    return Workload(_explicit_config(config), specs, preset=name)


def _explicit_config(config: EngineConfig) -> dict[str, Any]:
    defaults = EngineConfig().to_dict()
    return {k: v for k, v in config.to_dict().items() if v != defaults[k]}


def synthetic_workload(params: dict[str, Any]) -> Workload:
    """The page's synthetic form: Poisson arrivals and uniform lengths."""
    try:
        generator = {
            "seed": int(params.get("seed", 0)),
            "num_requests": int(params.get("num_requests", 32)),
            "arrival": {"rate_per_s": float(params.get("request_rate", 10.0))},
            "prompt_len": [int(params.get("prompt_len_min", 32)),
                           int(params.get("prompt_len_max", 512))],
            "output_len": [int(params.get("output_len_min", 16)),
                           int(params.get("output_len_max", 128))],
        }
    except (TypeError, ValueError) as err:
        raise WorkloadError(f"synthetic: {err}", "synthetic") from err
    lo_hi = (generator["prompt_len"], generator["output_len"])
    if generator["num_requests"] < 1 or generator["arrival"]["rate_per_s"] <= 0 or any(
            lo < 1 or hi < lo for lo, hi in lo_hi):
        raise WorkloadError("synthetic: counts, rate and lengths must be positive, min <= max",
                            "synthetic")
    if generator["num_requests"] > 1_000_000:
        raise WorkloadError("synthetic: too many requests", "num_requests", "limit")
    return Workload(dict(DEMO["config"]), presets.generate(generator))


def rows_to_specs(rows: Any) -> list[RequestSpec]:
    """The workload JSON list format: [{id, arrival_s | arrival_step, prompt_len, output_len}]."""
    if not isinstance(rows, list):
        raise TraceFormatError(0, "", "expected a JSON list of requests")
    specs = []
    seen: set[str] = set()
    for k, row in enumerate(rows, start=1):
        if not isinstance(row, dict):
            raise TraceFormatError(k, "", "each request must be an object")
        rid = str(row.get("id", f"r{k - 1}"))
        if rid in seen:
            raise TraceFormatError(k, "id", f"duplicate id {rid!r}")
        seen.add(rid)
        specs.append(RequestSpec(rid, _count(row, "prompt_len", k, 1),
                                 _count(row, "output_len", k, 1),
                                 arrival_step=_opt(row, "arrival_step", k, int),
                                 arrival_s=_opt(row, "arrival_s", k, float)))
    return specs


def _count(row: dict[str, Any], key: str, line: int, low: int) -> int:
    value = row.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise TraceFormatError(line, key, f"must be an integer >= {low}, got {value!r}")
    return value


def _opt(row: dict[str, Any], key: str, line: int, kind: type) -> Any:
    value = row.get(key)
    if value is None:
        return None
    ok = isinstance(value, int | float) and not isinstance(value, bool) and value >= 0
    if kind is int:
        ok = ok and isinstance(value, int)
    if not ok or value != value or value == float("inf"):
        raise TraceFormatError(line, key, f"must be a finite number >= 0, got {value!r}")
    return kind(value)


def read_trace(path: Path, max_items: int = 2_000_000) -> tuple[str, Workload, TraceReport]:
    """Detects the format of an uploaded file and loads it through the trace adapters
    (TraceFormatError names the line and field on bad input)."""
    report, stream = registry.open_trace(path)
    items = list(itertools.islice(stream, max_items))
    if report.kind != "steps":
        return report.format, Workload(dict(DEMO["config"]), items,
                                       trace=trace_info(report, items)), report
    records = [r.to_dict() for r in items]
    meta = report.meta
    specs = rows_to_specs(meta["requests"]) if meta.get("requests") else []
    return report.format, Workload(_replay_config(meta, records), specs, records=records,
                                   trace=trace_info(report, specs)), report


def trace_info(report: TraceReport, specs: list[RequestSpec]) -> dict[str, Any]:
    """What the views say about a trace: its format, what it does not record (`unknown`), the
    recording's own source (servescope-steps), and what was measured (vllm-bench)."""
    return {"format": report.format, "kind": report.kind, "num_rows": report.num_rows,
            "skipped": dict(report.skipped), "notes": list(report.notes),
            "unknown": list(report.meta.get("unknown", [])),
            "source": report.meta.get("source"),
            "measured": measured_summary(specs, report.meta.get("measured_summary"))}


METRICS = ("ttft", "tpot", "itl", "e2el")
MEASURED_SCALARS = ("completed", "failed", "duration", "total_input_tokens",
                    "total_output_tokens", "request_throughput", "output_throughput",
                    "total_token_throughput", "request_goodput")
_LATENCY_KEY = re.compile(r"(mean|median|std|p\d+(\.\d+)?)_(ttft|tpot|itl|e2el)_ms")


def measured_summary(specs: list[RequestSpec],
                     scalars: dict[str, Any] | None) -> dict[str, float | int] | None:
    """A benchmark's measured results under the keys the simulated summary uses: the file's own
    scalars where it has them, else statistics of its per-request measurements (None: none)."""
    lists: dict[str, list[float]] = {m: [] for m in METRICS}
    for spec in specs:
        m = spec.measured or {}
        ttft, e2el, itl = m.get("ttft_s"), m.get("e2el_s"), m.get("itl_s")
        if isinstance(ttft, float):
            lists["ttft"].append(ttft * 1000)
            if isinstance(e2el, float) and spec.output_len > 1:
                lists["tpot"].append((e2el - ttft) * 1000 / (spec.output_len - 1))
        if isinstance(e2el, float):
            lists["e2el"].append(e2el * 1000)
        if isinstance(itl, list):
            lists["itl"] += [x * 1000 for x in itl]
    out: dict[str, float | int] = {key: value for metric, values in lists.items() if values
                                   for key, value in _stats(metric, values).items()}
    for key, value in (scalars or {}).items():
        numeric = isinstance(value, int | float) and not isinstance(value, bool)
        if numeric and (key in MEASURED_SCALARS or _LATENCY_KEY.fullmatch(key)):
            out[key] = value
    return out or None


def _stats(metric: str, values: list[float]) -> dict[str, float]:
    """The statistics `vllm bench serve` reports (numpy's percentile, as vLLM uses)."""
    arr = np.asarray(values, dtype=float)
    return {f"mean_{metric}_ms": float(arr.mean()), f"median_{metric}_ms": float(np.median(arr)),
            f"std_{metric}_ms": float(arr.std()), f"p99_{metric}_ms": float(np.percentile(arr, 99))}


def _replay_config(meta: dict[str, Any], records: list[dict[str, Any]]) -> dict[str, Any]:
    """The recording's own config, or one inferred from its records (vLLM logs carry none)."""
    config = dict(meta.get("config") or {})
    if records:  # 0 is what a KV-event capture says of limits it does not know: keep defaults
        last = records[-1]
        config.setdefault("num_gpu_blocks", last["num_usable_blocks"] + 1)
        if last["max_num_seqs"]:
            config.setdefault("max_num_seqs", last["max_num_seqs"])
        if last["token_budget"]:
            config.setdefault("max_num_batched_tokens", last["token_budget"])
    if meta.get("block_size"):
        config.setdefault("block_size", int(meta["block_size"]))
    try:
        return _explicit_config(EngineConfig.from_dict(config))
    except (ConfigError, TypeError) as err:
        raise TraceFormatError(1, "config", f"the recording's config is not valid: {err}") from err
