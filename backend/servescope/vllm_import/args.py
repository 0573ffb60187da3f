"""Import a `vllm serve` command line or engine-args JSON into an EngineConfig, resolving the
defaults as vLLM 0.33 does (by GPU memory class), and list what was ignored and why."""

from __future__ import annotations

import contextlib
import json
import shlex
from dataclasses import dataclass, field
from typing import Any

from servescope.core import catalog, cost_model
from servescope.core.config import ConfigError, EngineConfig
from servescope.core.resolve import V1_RUNNER_SPEC_METHODS, resolve_config
from servescope.vllm_import import feature_matrix, flag_list
from servescope.vllm_import.cmdline import VllmArgsError, parse_command_line, parse_engine_args_json
from servescope.vllm_import.flags import NO_EFFECT, NOT_MODELLED, SCHEDULING


@dataclass
class ImportResult:
    config: EngineConfig
    resolved: dict[str, dict[str, Any]] = field(default_factory=dict)  # field -> value, source
    ignored: list[dict[str, Any]] = field(default_factory=list)  # flag, value, reason, note
    features: list[str] = field(default_factory=list)
    compatibility: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    memory: dict[str, Any] | None = None  # the cost model's KV sizing, when model and GPU known

    def to_dict(self) -> dict[str, Any]:
        return {"config": self.config.to_dict(), "resolved": self.resolved,
                "ignored": self.ignored, "features": self.features,
                "compatibility": self.compatibility, "warnings": self.warnings,
                "memory": self.memory}


def import_text(text: str, gpu: str | None = None, usage_context: str | None = None,
                version: str = feature_matrix.DEFAULT_VERSION) -> ImportResult:
    """A pasted command line or engine-args JSON object -> ImportResult."""
    stripped = text.strip()
    if stripped.startswith("{"):
        return import_args(parse_engine_args_json(stripped), gpu, usage_context or "llm_class",
                           version)
    return import_args(parse_command_line(stripped), gpu, usage_context or "api_server", version)


def import_args(args: dict[str, Any], gpu: str | None = None,
                usage_context: str = "api_server",
                version: str = feature_matrix.DEFAULT_VERSION) -> ImportResult:
    values: dict[str, Any] = {"gpu": gpu}
    resolved: dict[str, dict[str, Any]] = {}
    ignored: list[dict[str, Any]] = []
    features: set[str] = set()
    for name, raw in args.items():
        if name in SCHEDULING:
            target, kind = SCHEDULING[name]
            values[target] = _convert(name, raw, kind)
            negated = "no-" if kind == "bool" and values[target] is False else ""
            resolved[target] = {"value": values[target], "source": f"--{negated}{_flag(name)}"}
        elif name in NOT_MODELLED:
            feature = NOT_MODELLED[name]
            if feature and _enabled(raw):
                features.add(feature)
            ignored.append(_ignored(name, raw, "not_modelled",
                                    "changes scheduling or memory; not simulated"))
        elif name in NO_EFFECT:
            ignored.append(_ignored(name, raw, "no_effect", "does not affect scheduling"))
        elif name in flag_list.known_dests():
            ignored.append(_ignored(name, raw, "unreviewed", "a vLLM 0.33 flag whose effect on "
                                    "scheduling ServeScope has not reviewed; not simulated"))
        else:
            ignored.append(_ignored(name, raw, "unknown", "not a vLLM 0.33 flag ServeScope knows"))
    warnings = _resolve_defaults(values, resolved, args, usage_context)
    config = EngineConfig.from_dict(values)
    features |= _config_features(config, args)
    return ImportResult(config, resolved, ignored, sorted(features),
                        feature_matrix.check(features, version), warnings,
                        _memory(config, warnings))


def _memory(config: EngineConfig, warnings: list[str]) -> dict[str, Any] | None:
    """vLLM's startup arithmetic (weights, activations, KV) and the error it would raise."""
    if not (config.model and config.gpu):
        return None
    try:
        memory = dict(cost_model.memory_breakdown(config))
    except ConfigError as err:
        warnings.append(f"cost model: {err}")
        return None
    warnings[:] = [w for w in warnings if not w.startswith("num_gpu_blocks:")]
    try:
        cost_model.num_gpu_blocks(config)
    except ConfigError as err:
        warnings.append(f"vLLM would not start: {err}")
    return memory


def _resolve_defaults(values: dict[str, Any], resolved: dict[str, dict[str, Any]],
                      args: dict[str, Any], usage_context: str) -> list[str]:
    warnings: list[str] = []
    chunked = values.get("enable_chunked_prefill", True)
    if values.get("max_model_len") is None and values.get("model"):
        try:
            known = catalog.model(values["model"]).max_position_embeddings
        except ConfigError:
            known = None
        if known:
            values["max_model_len"] = known
            resolved["max_model_len"] = {"value": known, "source": "default: the model's "
                                         "max_position_embeddings"}
    max_len = values.get("max_model_len")
    defaults = {
        "block_size": (16, "vLLM default on CUDA"),
        "enable_chunked_prefill": (True, "always on in the V1 scheduler"),
        "enable_prefix_caching": (True, "on by default in vLLM V1"),
        "long_prefill_token_threshold": _threshold_default(args, max_len),
        "gpu_memory_utilization": (0.9, "vLLM default"),
    }
    defaults["async_scheduling"] = _async_default(args)
    batch = resolve_config(values, usage_context)  # the one resolution's budget
    for name in ("max_num_batched_tokens", "max_num_seqs"):
        if name in batch.defaults:
            defaults[name] = (getattr(batch.config, name), batch.defaults[name])
    for name, (value, reason) in defaults.items():
        if name not in values:
            values[name] = value
            resolved[name] = {"value": value, "source": f"default: {reason}"}
    if max_len is None:
        warnings.append("max_model_len not given: vLLM takes it from the model's config; "
                        "requests are not length-checked here")
    elif not chunked and values["max_num_batched_tokens"] < max_len:
        warnings.append(f"max_num_batched_tokens {values['max_num_batched_tokens']} < "
                        f"max_model_len {max_len} with chunked prefill off: vLLM refuses this")
    if values.get("num_gpu_blocks") is None:
        warnings.append("num_gpu_blocks: derived from model, GPU and gpu_memory_utilization "
                        "by the cost model (or pass --num-gpu-blocks-override)")
    return warnings


def _async_default(args: dict[str, Any]) -> tuple[bool, str]:
    """vLLM 0.33 turns async scheduling on unless something it cannot run with is set
    (VllmConfig.__post_init__)."""
    spec = args.get("speculative_config")
    if isinstance(spec, str):
        with contextlib.suppress(ValueError):
            spec = json.loads(spec)
    method = spec.get("method") if isinstance(spec, dict) else None
    if _enabled(args.get("pipeline_parallel_size")):
        return False, "off with pipeline parallelism (vLLM 0.33's V1 model runner)"
    if str(args.get("runner") or args.get("task") or "").lower() in ("pooling", "embed"):
        return False, "off for pooling models"
    if method in V1_RUNNER_SPEC_METHODS:  # core/resolve.py: the V1 model runner's rule
        return False, f"off with {method} speculative decoding (the V1 model runner)"
    return True, "vLLM 0.33 turns it on (step N + 1 planned while step N runs)"


def _threshold_default(args: dict[str, Any], max_len: int | None) -> tuple[int, str]:
    partial = int(args.get("max_num_partial_prefills", 1) or 1)
    if partial > 1 and max_len:
        return int(max_len * 0.04), "4% of max_model_len when max_num_partial_prefills > 1"
    return 0, "vLLM default (no per-request chunk cap)"


def _config_features(config: EngineConfig, args: dict[str, Any]) -> set[str]:
    features = set()
    if config.enable_chunked_prefill:
        features.add("chunked_prefill")
    if config.enable_prefix_caching:
        features.add("prefix_caching")
    if config.async_scheduling:
        features.add("async_scheduling")
    if config.speculative is not None:
        features.add("speculative_decoding")
    if args.get("enforce_eager") is not True:
        features.add("cuda_graph")
    return features


def _enabled(raw: Any) -> bool:
    """Whether a not-modelled flag turns its feature on (`--pipeline-parallel-size 1` does not)."""
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("", "false", "0", "1", "none", "null", "{}", "generate"):
        return False
    return True


def _ignored(name: str, raw: Any, reason: str, note: str) -> dict[str, Any]:
    return {"flag": f"--{_flag(name)}", "value": raw, "reason": reason, "note": note}


def _flag(name: str) -> str:
    return name.replace("_", "-")


def _convert(name: str, raw: Any, kind: str) -> Any:
    if raw is None:
        return None
    try:
        if kind == "bool":
            return raw if isinstance(raw, bool) else str(raw).lower() in ("1", "true", "yes")
        if kind == "int":
            return _human_int(raw)
        if kind == "float":
            return float(raw)
        if kind == "json":  # vLLM's --speculative-config: a JSON object (checked on parsing)
            return raw if isinstance(raw, dict) else json.loads(str(raw))
    except ValueError as err:
        raise VllmArgsError(f"--{_flag(name)}: expected {kind}, got {raw!r}") from err
    text = str(raw)
    return None if text.lower() == "none" else text


def _human_int(raw: Any) -> int:
    """vLLM's human-readable ints: 8k = 8000, 8K = 8192, 1m = 10**6, 1M = 2**20."""
    if isinstance(raw, bool):
        raise ValueError(raw)
    if isinstance(raw, int):
        return raw
    text = str(raw).strip()
    scale = {"k": 10**3, "m": 10**6, "g": 10**9, "K": 2**10, "M": 2**20, "G": 2**30}
    if text and text[-1] in scale:
        return int(float(text[:-1]) * scale[text[-1]])
    return int(text)


def to_vllm_serve(config: EngineConfig) -> str:
    """The `vllm serve` line that reproduces `config`'s scheduling (every flag explicit)."""
    parts = ["vllm", "serve", shlex.quote(config.model or "MODEL")]
    data = config.to_dict()
    for name, (target, kind) in SCHEDULING.items():
        value = data[target]
        if name == "model" or value is None:
            continue
        if kind == "bool":
            parts.append(f"--{'' if value else 'no-'}{_flag(name)}")
        elif kind == "json":
            parts.append(f"--{_flag(name)} {shlex.quote(json.dumps(value))}")
        else:
            parts.append(f"--{_flag(name)} {shlex.quote(str(value))}")
    return " ".join(parts)
