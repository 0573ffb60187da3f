"""kubernetes-sigs/inference-perf: its config YAML (`load` stages, `data` lengths) turned into the
requests it would send, and its lifecycle-metrics reports read as measured results."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from servescope.core.request import RequestSpec
from servescope.traces._io import open_text
from servescope.traces._specs import build_spec
from servescope.traces._yaml import load_mapping
from servescope.traces.errors import TooManyRequests, TraceFormatError, shown
from servescope.traces.report import TraceReport

LOAD_TYPES = ("constant", "poisson")
DATA_TYPES = ("shared_prefix", "random", "synthetic")
SHARED_PREFIX = ("num_groups", "num_prompts_per_group", "system_prompt_len", "question_len",
                 "output_len")
# The most requests a profile may generate where no session cap is given (the CLI): 10x the
# server's default max_requests_per_session (api/settings.py); a spec is ~200 bytes.
MAX_PROFILE_REQUESTS = 10_000_000
REPORT_NAME = "summary_lifecycle_metrics.json"  # what inference-perf writes beside config.yaml
# inference-perf report metric (seconds) -> vllm bench summary name (ms)
REPORT_METRICS = (("request_latency", "e2el"), ("time_to_first_token", "ttft"),
                  ("inter_token_latency", "itl"), ("time_per_output_token", "tpot"))


def read(path: Path, report: TraceReport, seed: int | None = None,
         measured_report: Path | None = None, max_requests: int | None = None,
         window_s: tuple[float, float | None] | None = None) -> Iterator[RequestSpec]:
    """The requests of one inference-perf run. Arrivals follow `load.stages` back to back;
    lengths follow `data`. `seed` defaults to `load.base_seed` (else 0). A lifecycle report
    (`measured_report`, else summary_lifecycle_metrics.json beside the config) becomes
    report.meta["measured_summary"]. Before anything is generated the stages are counted
    (in `window_s` when given): over `max_requests` (else MAX_PROFILE_REQUESTS) raises
    TooManyRequests with the window end that fits."""
    config = load_mapping(Path(path), "an inference-perf config is a YAML mapping")
    check_count(config, max_requests, window_s)
    specs = requests_from_config(config, report, seed)
    _attach_measured(report, Path(path), measured_report)
    yield from specs


def requests_from_config(config: dict[str, Any], report: TraceReport,
                         seed: int | None = None) -> list[RequestSpec]:
    """The requests an inference-perf config (as parsed from its YAML) sends (at most
    MAX_PROFILE_REQUESTS)."""
    check_count(config, None)
    arrivals = _arrivals(config, _rng(config, seed))
    rng = _rng(config, seed)
    data = _section(config, "data")
    kind = data.get("type")
    if kind == "shared_prefix":
        specs = _shared_prefix(report, _section(data, "shared_prefix", "data."), arrivals, rng)
    elif kind in ("random", "synthetic"):
        specs = _distributions(report, data, arrivals, rng)
    else:
        raise TraceFormatError(0, "data.type", f"data type {shown(kind)} is not supported (its "
                               f"lengths are not in the config); supported: "
                               f"{', '.join(DATA_TYPES)}")
    if (config.get("api") or {}).get("streaming") is False:
        report.note("the run did not stream: its TTFT equals its E2E latency")
    return specs


def _section(parent: dict[str, Any], key: str, where: str = "") -> dict[str, Any]:
    value = parent.get(key)
    if not isinstance(value, dict):
        raise TraceFormatError(0, where + key, "missing (a mapping is required)")
    return value


def _number(parent: dict[str, Any], key: str, where: str, integer: bool = False) -> float:
    value = parent.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0 \
            or (integer and not float(value).is_integer()):
        kind = "a positive integer" if integer else "a positive number"
        raise TraceFormatError(0, where + key, f"must be {kind}, got {shown(value)}")
    return float(value)


def check_count(config: dict[str, Any], max_requests: int | None,
                window_s: tuple[float, float | None] | None = None) -> None:
    """TooManyRequests when the stages send more than `max_requests` in the window; counted
    from each stage's rate x duration (an upper bound for poisson), nothing generated."""
    cap = MAX_PROFILE_REQUESTS if max_requests is None else max_requests
    start, end = window_s if window_s is not None else (0.0, None)
    count, fits_end_s, at = 0.0, None, 0.0
    for rate, duration in _stages(_section(config, "load")):
        low, high = max(at, start), at + duration if end is None else min(at + duration, end)
        if high > low:
            if fits_end_s is None and count + rate * (high - low) > cap:
                fits_end_s = low + (cap - count) / rate
            count += rate * (high - low)
        at += duration
    if count >= cap + 0.5:  # stage counts are rounded to whole requests
        num = int(min(count, 2**63 - 1))
        raise TooManyRequests(num, cap, fits_end_s, window_s is not None)


def _stages(load: dict[str, Any]) -> list[tuple[float, float]]:
    stages = load.get("stages")
    if not isinstance(stages, list) or not stages:
        raise TraceFormatError(0, "load.stages", "missing (a list of {rate, duration})")
    out = []
    for i, stage in enumerate(stages):
        where = f"load.stages[{i}]."
        if not isinstance(stage, dict):
            raise TraceFormatError(0, where[:-1], "each stage is a mapping {rate, duration}")
        out.append((_number(stage, "rate", where), _number(stage, "duration", where)))
    return out


def _rng(config: dict[str, Any], seed: int | None) -> np.random.Generator:
    base = config.get("load", {}).get("base_seed") if seed is None else seed
    return np.random.default_rng(int(base) if isinstance(base, int) else 0)


def _arrivals(config: dict[str, Any], rng: np.random.Generator) -> np.ndarray:
    """Stage after stage: `rate` req/s for `duration` s, evenly spaced (constant) or with
    exponential gaps (poisson)."""
    load = _section(config, "load")
    kind = load.get("type", "constant")
    if kind not in LOAD_TYPES:
        raise TraceFormatError(0, "load.type", f"load type {shown(kind)} is not supported; "
                               f"supported: {', '.join(LOAD_TYPES)}")
    times: list[np.ndarray] = []
    start = 0.0
    for rate, duration in _stages(load):
        count = int(round(rate * duration))
        if kind == "constant":
            offsets = np.arange(count) / rate
        else:
            offsets = np.cumsum(rng.exponential(1.0 / rate, count))
            offsets = offsets[offsets < duration]
        times.append(start + offsets)
        start += duration
    return np.concatenate(times)


def _shared_prefix(report: TraceReport, cfg: dict[str, Any], arrivals: np.ndarray,
                   rng: np.random.Generator) -> list[RequestSpec]:
    """Each request sends one of num_groups x num_prompts_per_group prompts, drawn uniformly:
    the group's system prompt then that prompt's question, so a repeated prompt is shared
    whole (the prefix cache sees the same tokens)."""
    where = "data.shared_prefix."
    groups, per_group, system, question, output = (
        int(_number(cfg, key, where, integer=True)) for key in SHARED_PREFIX)
    n = len(arrivals)
    questions = _lengths(cfg.get("question_distribution"), question, n, rng,
                         where + "question_distribution.")
    outputs = _lengths(cfg.get("output_distribution"), output, n, rng,
                       where + "output_distribution.")
    picks = rng.integers(0, groups * per_group, n)
    if cfg.get("enable_multi_turn_chat"):
        report.note("enable_multi_turn_chat: each request is sent alone (conversation history "
                    "is not modelled)")
    specs = []
    for i in range(n):
        group, prompt = divmod(int(picks[i]), per_group)
        prefix = ((f"ip-system-{group}", system), (f"ip-question-{group}-{prompt}",
                                                   int(questions[i])))
        spec = build_spec(report, f"ip{i}", system + int(questions[i]), int(outputs[i]),
                          arrival_s=float(arrivals[i]), prefix=prefix)
        if spec is not None:
            specs.append(spec)
    return specs


def _distributions(report: TraceReport, data: dict[str, Any], arrivals: np.ndarray,
                   rng: np.random.Generator) -> list[RequestSpec]:
    n = len(arrivals)
    prompts = _lengths(_section(data, "input_distribution", "data."), None, n, rng,
                       "data.input_distribution.")
    outputs = _lengths(_section(data, "output_distribution", "data."), None, n, rng,
                       "data.output_distribution.")
    specs = [build_spec(report, f"ip{i}", int(prompts[i]), int(outputs[i]),
                        arrival_s=float(arrivals[i])) for i in range(n)]
    return [s for s in specs if s is not None]


def _lengths(dist: Any, fixed: int | None, n: int, rng: np.random.Generator,
             where: str) -> np.ndarray:
    """A normal draw (mean, std_dev) clipped to [min, max], rounded; `fixed` when no
    distribution is given."""
    if dist is None and fixed is not None:
        return np.full(n, fixed, dtype=np.int64)
    if not isinstance(dist, dict):
        raise TraceFormatError(0, where[:-1], "must be a mapping {min, max, mean, std_dev}")
    low, high = _number(dist, "min", where), _number(dist, "max", where)
    mean = _number(dist, "mean", where)
    std = float(dist.get("std_dev", 0) or 0)
    if high < low:
        raise TraceFormatError(0, where + "max", f"max {high:g} is below min {low:g}")
    values = rng.normal(mean, std, n) if std > 0 else np.full(n, mean)
    return np.rint(np.clip(values, low, high)).astype(np.int64)


def _attach_measured(report: TraceReport, config_path: Path, given: Path | None) -> None:
    path = given if given is not None else config_path.with_name(REPORT_NAME)
    if given is None and not path.exists():
        return
    report.meta["measured_summary"] = read_report(path)
    report.note(f"measured: inference-perf report {path.name}")


def read_report(path: Path) -> dict[str, Any]:
    """An inference-perf lifecycle-metrics report (seconds) as a vllm-bench-style summary (ms):
    mean_/median_/p90_/p99_ of e2el, ttft, itl, tpot, and completed. inference-perf's ITL is
    the gap between streamed chunks, which vLLM sends in pairs: about half the per-token time."""
    with open_text(Path(path)) as handle:
        try:
            data = json.load(handle)
        except json.JSONDecodeError as err:
            raise TraceFormatError(err.lineno, "", f"not JSON: {err.msg}") from None
        except UnicodeDecodeError:
            raise TraceFormatError(0, "", "not UTF-8 text") from None
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
