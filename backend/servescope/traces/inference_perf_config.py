"""inference-perf's config schema, as its pydantic models define it (inference_perf/config/:
common.py Distribution, datagen/config.py SharedPrefix and DataConfig, loadgen/config.py
LoadConfig and StandardLoadStage): the same field names and aliases, the same defaults, unknown
keys refused as its StrictBaseModel refuses them, and its validators. Errors name the field and
never echo a value."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from servescope.traces.errors import TraceFormatError

DISTRIBUTION_TYPES = ("normal", "skew_normal", "lognormal", "uniform", "poisson", "fixed")
LOAD_TYPES = ("constant", "poisson", "trace_replay", "concurrent", "trace_session_replay")
DATA_TYPES = ("mock", "shareGPT", "synthetic", "random", "shared_prefix", "cnn_dailymail",
              "infinity_instruct", "billsum_conversations", "otel_trace_replay",
              "weka_trace_replay", "conversation_replay", "visionarena")
SWEEP_TYPES = ("geometric", "linear")
# fields inference-perf accepts that change nothing a simulation sees (clients, files, images)
DATA_OTHER = ("path", "corpus_file_path", "multimodal", "trace", "otel_trace_replay",
              "weka_trace_replay", "conversation_replay", "visionarena", "use_chat_template")
LOAD_OTHER = ("num_workers", "worker_max_concurrency", "worker_max_tcp_connections", "trace",
              "circuit_breakers", "request_timeout", "lora_traffic_split", "base_seed")


@dataclass(frozen=True)
class Distribution:
    """common.py Distribution; `std_dev` already set from `variance` as its validator does."""

    min: int = 10
    max: int = 1024
    mean: float = 512.0
    std_dev: float = 200.0
    total_count: int | None = None
    type: str = "normal"
    skew: float = 0.0


@dataclass(frozen=True)
class SharedPrefix:
    num_groups: int = 10
    num_prompts_per_group: int = 10
    system_prompt_len: int | Distribution = 100
    question_len: int | Distribution = 50
    output_len: int | Distribution = 50
    seed: int | None = None
    question_distribution: Distribution | None = None
    output_distribution: Distribution | None = None
    enable_multi_turn_chat: bool = False


@dataclass(frozen=True)
class Stage:
    rate: float
    duration: int


@dataclass(frozen=True)
class Sweep:
    type: str
    num_requests: int = 2000
    timeout: float = 60.0
    num_stages: int = 5
    stage_duration: int = 180
    saturation_percentile: float = 95.0


@dataclass(frozen=True)
class LoadConfig:
    type: str = "constant"
    interval: float = 1.0
    stages: tuple[Stage, ...] = ()
    sweep: Sweep | None = None
    base_seed: int | None = None  # inference-perf's default is the wall clock: ours is given


@dataclass(frozen=True)
class DataConfig:
    type: str = "mock"
    input_distribution: Distribution | None = None
    output_distribution: Distribution | None = None
    shared_prefix: SharedPrefix | None = None
    ignored: tuple[str, ...] = field(default=())  # fields given that a simulation cannot use


def _mapping(value: Any, where: str, known: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TraceFormatError(0, where, "must be a mapping")
    for key in value:
        if key not in known:
            name = key if isinstance(key, str) and key.isidentifier() and len(key) <= 40 \
                else "?"
            raise TraceFormatError(0, f"{where}.{name}", "not a field of inference-perf's "
                                   f"config here (it refuses unknown keys); known: "
                                   f"{', '.join(known)}")
    return value


def _int(value: Any, where: str, low: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not float(value).is_integer():
        raise TraceFormatError(0, where, "must be a whole number")
    if low is not None and value < low:
        raise TraceFormatError(0, where, f"must be at least {low}")
    return int(value)


def _float(value: Any, where: str, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(value):
        raise TraceFormatError(0, where, "must be a finite number")
    if positive and value <= 0:
        raise TraceFormatError(0, where, "must be positive")
    return float(value)


def _choice(value: Any, where: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise TraceFormatError(0, where, f"must be one of: {', '.join(choices)}")
    return str(value)


def distribution(value: Any, where: str) -> Distribution:
    raw = _mapping(value, where, ("min", "max", "mean", "std_dev", "total_count", "type",
                                  "variance", "skew"))
    defaults = Distribution()
    low = _int(raw.get("min", defaults.min), where + ".min")
    high = _int(raw.get("max", defaults.max), where + ".max")
    std = _float(raw.get("std_dev", defaults.std_dev), where + ".std_dev")
    variance = raw.get("variance")
    if variance is not None:  # Distribution.validate_distribution, with its default std_dev 200
        if std > 0:
            raise TraceFormatError(0, where + ".variance", "give std_dev or variance, not both "
                                   "(std_dev defaults to 200: set std_dev: 0 with variance)")
        if _float(variance, where + ".variance") < 0:
            raise TraceFormatError(0, where + ".variance", "cannot be negative")
        std = math.sqrt(float(variance))
    if low > high:
        raise TraceFormatError(0, where + ".min", "min cannot be greater than max")
    if std < 0:
        raise TraceFormatError(0, where + ".std_dev", "cannot be negative")
    count = raw.get("total_count")
    return Distribution(
        low, high, _float(raw.get("mean", defaults.mean), where + ".mean"), std,
        None if count is None else _int(count, where + ".total_count", 1),
        _choice(raw.get("type", defaults.type), where + ".type", DISTRIBUTION_TYPES),
        _float(raw.get("skew", defaults.skew), where + ".skew"))


def _length(value: Any, where: str) -> int | Distribution:
    return distribution(value, where) if isinstance(value, dict) else _int(value, where, 0)


def _aliased(raw: dict[str, Any], where: str, alias: str, name: str, default: int) -> int:
    """A field with a validation alias (AliasChoices(alias, name)): either name, not both."""
    if alias in raw and name in raw:
        raise TraceFormatError(0, f"{where}.{alias}", f"give {alias} or {name}, not both")
    given = alias if alias in raw else name
    return _int(raw.get(given, default), f"{where}.{given}", 1)


def shared_prefix(value: Any, where: str) -> SharedPrefix:
    raw = _mapping(value, where, (
        "num_unique_system_prompts", "num_groups", "num_users_per_system_prompt",
        "num_prompts_per_group", "system_prompt_len", "question_len", "output_len", "seed",
        "question_distribution", "output_distribution", "enable_multi_turn_chat",
        "multimodal"))
    d = SharedPrefix()
    lengths = {k: _length(raw.get(k, getattr(d, k)), f"{where}.{k}")
               for k in ("system_prompt_len", "question_len", "output_len")}
    legacies = {k: None if raw.get(k) is None else distribution(raw[k], f"{where}.{k}")
                for k in ("question_distribution", "output_distribution")}
    out = SharedPrefix(
        num_groups=_aliased(raw, where, "num_unique_system_prompts", "num_groups",
                            d.num_groups),
        num_prompts_per_group=_aliased(raw, where, "num_users_per_system_prompt",
                                       "num_prompts_per_group", d.num_prompts_per_group),
        seed=None if raw.get("seed") is None else _int(raw["seed"], where + ".seed"),
        enable_multi_turn_chat=raw.get("enable_multi_turn_chat", False) is True,
        **lengths, **legacies)  # type: ignore[arg-type]
    for inline, legacy in (("question_len", "question_distribution"),
                           ("output_len", "output_distribution")):  # its model validator
        if isinstance(getattr(out, inline), Distribution) and getattr(out, legacy) is not None:
            raise TraceFormatError(0, f"{where}.{legacy}", f"give an inline distribution on "
                                   f"{inline} or the legacy {legacy}, not both")
    return out


def data_config(value: Any) -> DataConfig:
    raw = _mapping(value, "data", ("type", "input_distribution", "output_distribution",
                                   "shared_prefix", *DATA_OTHER))
    kind = _choice(raw.get("type", "mock"), "data.type", DATA_TYPES)
    if raw.get("use_chat_template") and kind != "random":  # validate_use_chat_template_scope
        raise TraceFormatError(0, "data.use_chat_template", "only the 'random' type takes it")
    dists = {k: None if raw.get(k) is None else distribution(raw[k], f"data.{k}")
             for k in ("input_distribution", "output_distribution")}
    prefix = raw.get("shared_prefix")
    return DataConfig(
        type=kind, shared_prefix=None if prefix is None else shared_prefix(
            prefix, "data.shared_prefix"),
        ignored=tuple(k for k in DATA_OTHER if raw.get(k)), **dists)


def _stage(value: Any, where: str) -> Stage:
    raw = _mapping(value, where, ("rate", "duration", "num_requests", "concurrency_level"))
    for key in ("num_requests", "concurrency_level"):  # StandardLoadStage's validator
        if raw.get(key) is not None:
            raise TraceFormatError(0, f"{where}.{key}", "not for constant/poisson load types")
    for key in ("rate", "duration"):
        if key not in raw:
            raise TraceFormatError(0, f"{where}.{key}", "missing (required)")
    return Stage(_float(raw["rate"], where + ".rate", positive=True),
                 _int(raw["duration"], where + ".duration", 1))


def load_config(value: Any) -> LoadConfig:
    raw = _mapping(value, "load", ("type", "interval", "stages", "sweep", *LOAD_OTHER))
    kind = _choice(raw.get("type", "constant"), "load.type", LOAD_TYPES)
    stages = raw.get("stages") or []
    if not isinstance(stages, list):
        raise TraceFormatError(0, "load.stages", "must be a list of {rate, duration}")
    sweep = raw.get("sweep")
    if sweep is not None:
        s = _mapping(sweep, "load.sweep", ("type", "num_requests", "timeout", "num_stages",
                                           "stage_duration", "saturation_percentile"))
        d = Sweep("linear")
        sweep = Sweep(_choice(s.get("type"), "load.sweep.type", SWEEP_TYPES),
                      _int(s.get("num_requests", d.num_requests), "load.sweep.num_requests", 1),
                      _float(s.get("timeout", d.timeout), "load.sweep.timeout"),
                      _int(s.get("num_stages", d.num_stages), "load.sweep.num_stages", 1),
                      _int(s.get("stage_duration", d.stage_duration),
                           "load.sweep.stage_duration", 1),
                      _float(s.get("saturation_percentile", d.saturation_percentile),
                             "load.sweep.saturation_percentile"))
    seed = raw.get("base_seed")
    return LoadConfig(kind, _float(raw.get("interval", 1.0), "load.interval"),
                      tuple(_stage(st, f"load.stages[{i}]") for i, st in enumerate(stages)),
                      sweep, None if seed is None else _int(seed, "load.base_seed"))
