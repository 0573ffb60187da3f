"""An uploaded trace as a session's workload: read through the trace adapters with the options
it was uploaded with, within the requests a session may hold, and what the views say about it
(init.trace: what the file records, what the options did, which requests the KV cache cannot
hold)."""

from __future__ import annotations

import dataclasses
import itertools
import re
from pathlib import Path
from typing import Any

from servescope.api.uploads.store import Store
from servescope.core.config import ConfigError, EngineConfig
from servescope.core.engine import Engine
from servescope.core.metrics import latency_stats
from servescope.core.request import RequestSpec
from servescope.scenarios.workloads import Workload, WorkloadError
from servescope.traces import registry, workload_json
from servescope.traces.errors import TraceFormatError, shown
from servescope.traces.load import open_with_options, requests_from
from servescope.traces.report import TraceReport
from servescope.traces.upload_options import UploadOptions

MAX_RECORDS = 500_000  # steps of a recording replayed (read whole into memory)


def read_trace(path: Path, options: UploadOptions | None = None,
               max_requests: int | None = None) -> tuple[str, Workload, TraceReport]:
    """Detects the format (unless the options name one) and loads the file through the trace
    adapters: TraceFormatError names the line and field on bad input, OptionError an option
    that does not apply, TooManyRequests a request trace over `max_requests`."""
    options = options or UploadOptions()
    fmt, report, stream = open_with_options(path, options, max_requests)
    if registry.FORMATS[fmt].kind == "requests":
        specs = requests_from(stream, report, options, max_requests)
        whole = not options.trace_options().window_s and options.sample_n is None and \
            options.limit is None
        return fmt, Workload({}, specs,  # a request trace brings no settings of its own
                             trace=trace_info(report, specs, whole)), report
    records = [r.to_dict() for r in itertools.islice(stream, MAX_RECORDS + 1)]
    if len(records) > MAX_RECORDS:
        records.pop()
        report.note(f"the recording has more than {MAX_RECORDS:,} steps; only the first "
                    f"{MAX_RECORDS:,} are replayed")
    meta = report.meta
    specs = workload_json.read_rows(meta["requests"]) if meta.get("requests") else []
    return fmt, Workload(_replay_config(meta, records), specs, records=records,
                         trace=trace_info(report, specs)), report


def stored_trace(store: Store, trace_id: str, owner: str) -> Workload:
    """An uploaded trace of `owner`'s (an owner digest) as loaded with the options it was uploaded
    with (read again unless the store still holds what it loads as). Another client's upload
    is refused as one that does not exist."""
    stored, path = store.trace(trace_id, owner), store.trace_path(trace_id, owner)
    if stored is None or path is None:
        raise WorkloadError(f"no uploaded trace {shown(trace_id)} of this upload token's",
                            "trace")
    workload: Workload | None = store.loaded.get(trace_id)
    if workload is None:
        options = dataclasses.replace(UploadOptions.from_dict(stored["options"]),
                                      format=stored["format"])
        _, workload, _ = read_trace(path, options)
        remember(store, trace_id, workload)
    trace = {"trace_id": trace_id, "filename": stored["filename"], **(workload.trace or {})}
    return dataclasses.replace(workload, base_config=dict(workload.base_config),
                               specs=list(workload.specs), trace=trace)


def remember(store: Store, trace_id: str, workload: Workload) -> None:
    """Keep a request trace's loaded workload (a recorded run's records are not kept: they can
    be many more than a request trace's requests)."""
    if workload.records is None:
        store.loaded.put(trace_id, workload, weight=len(workload.specs))


def trace_info(report: TraceReport, specs: list[RequestSpec],
               whole: bool = True) -> dict[str, Any]:
    """What the views say about a trace: its format, what it does not record (`unknown`), the
    recording's own source (servescope-steps), and what was measured (vllm-bench: the file's
    own figures describe its whole run, so a window or sample keeps only its requests' own)."""
    scalars = report.meta.get("measured_summary") if whole else None
    return {"format": report.format, "kind": report.kind, "num_rows": report.num_rows,
            "skipped": dict(report.skipped), "notes": list(report.notes),
            "unknown": list(report.meta.get("unknown", [])),
            "source": report.meta.get("source"), "measured": measured_summary(specs, scalars)}


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
        m = spec.measured
        if not m:  # most traces measure nothing: skip their requests at once
            continue
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
                                   for key, value in latency_stats(metric, values).items()}
    for key, value in (scalars or {}).items():
        numeric = isinstance(value, int | float) and not isinstance(value, bool)
        if numeric and (key in MEASURED_SCALARS or _LATENCY_KEY.fullmatch(key)):
            out[key] = value
    return out or None


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
        EngineConfig.from_dict(config)
        return config
    except (ConfigError, TypeError) as err:
        raise TraceFormatError(1, "config", f"the recording's config is not valid: {err}") from err


def with_fit_notes(trace: dict[str, Any] | None, specs: list[RequestSpec],
                   engines: list[tuple[str, Engine | None]]) -> dict[str, Any] | None:
    """`trace` with a note per engine whose KV cache (or max_model_len) cannot hold some of the
    trace's requests: the engine rejects those on arrival, so the page says how many and why."""
    if trace is None:
        return None
    notes = [note for label, engine in engines if engine is not None
             for note in [_fit_note(engine, specs, label if len(engines) > 1 else "")] if note]
    return {**trace, "notes": [*trace.get("notes", []), *notes]} if notes else trace


def _fit_note(engine: Engine, specs: list[RequestSpec], label: str) -> str | None:
    config, usable = engine.config, engine.kv.pool.num_usable_blocks
    unfit = [(s.prompt_len + s.output_len, why[0]) for s in specs
             for why in [engine.unfit(s)] if why is not None]
    too_long = [n for n, kind in unfit if kind == "max_model_len"]
    too_big = [n for n, kind in unfit if kind == "kv"]
    max_len = config.max_model_len
    where = f" ({label})" if label else ""
    parts = []
    if too_big:
        parts.append(f"{len(too_big):,} of {len(specs):,} requests need more KV blocks than "
                     f"this config's cache holds{where} ({usable:,} usable blocks of "
                     f"{config.block_size} tokens = {usable * config.block_size:,} tokens; the "
                     f"longest request is {max(too_big):,})")
    if too_long:
        parts.append(f"{len(too_long):,} of {len(specs):,} requests are longer than "
                     f"max_model_len {max_len:,}{where}")
    if not parts:
        return None
    return (f"{' and '.join(parts)}: the engine rejects them on arrival. A bigger num_gpu_blocks "
            "or max_model_len, or a model and GPU, in the Engine config fits them.")
