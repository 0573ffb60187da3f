"""Speculative decoding's configuration, parsed from vLLM's --speculative-config JSON.

The method names and the shorthands are vLLM 0.33's (vllm/config/speculative.py,
SpeculativeMethod and SpeculativeConfig.__post_init__); keys vLLM knows that ServeScope does
not simulate are kept in the JSON as given but ignored here.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from servescope.core.config_error import ConfigError

FIELD = "speculative_config"
# vllm/config/speculative.py SpeculativeMethod (EagleModelTypes, NgramGPUTypes, DSparkModelTypes)
METHODS = ("ngram", "draft_model", "suffix", "custom_class", "eagle", "eagle3",
           "extract_hidden_states", "mtp", "dflash", "ngram_gpu", "dspark")
# vllm/config/speculative.py MTPModelTypes: __post_init__ warns they are deprecated and maps
# each to "mtp"
MTP_ALIASES = ("deepseek_mtp", "dots3_note_mtp", "mimo_mtp", "mimo_v2_mtp", "glm4_moe_mtp",
               "glm4_moe_lite_mtp", "glm_ocr_mtp", "ernie_mtp", "nemotron_h_mtp",
               "exaone_moe_mtp", "exaone4_5_mtp", "qwen3_next_mtp", "qwen4_exp_mtp",
               "qwen3_5_mtp", "longcat_flash_mtp", "bailing_hybrid_v3_mtp", "minimax_m3_mtp",
               "bailing_hybrid_mtp", "kimi_k3_mtp", "pangu_ultra_moe_mtp", "step3p5_mtp",
               "step5_mtp", "hy_v3_mtp", "hy_v4_mtp", "gemma4_mtp", "inkling_mtp",
               "glm5_next_mtp")
# vllm/config/speculative.py __post_init__: prompt_lookup_min/max default to 5 for ngram
NGRAM_DEFAULT_LOOKUP = 5


@dataclass(frozen=True)
class SpeculativeConfig:
    """What the scheduler and the clock read of a speculative config (K is
    num_speculative_tokens)."""

    method: str
    num_speculative_tokens: int
    model: str | None = None
    draft_tensor_parallel_size: int | None = None
    prompt_lookup_max: int | None = None
    prompt_lookup_min: int | None = None
    num_speculative_tokens_per_batch_size: tuple[tuple[int, int, int], ...] | None = None
    acceptance_rates: tuple[float, ...] | None = None
    # the MTP draft's modules: vLLM reads num_nextn_predict_layers from the draft checkpoint's
    # config.json (SpeculativeConfig.use_multi_module_mtp, default 1); ServeScope has no
    # checkpoint, so speculative_config may carry it
    num_nextn_predict_layers: int = 1


def parse_speculative_config(value: dict[str, Any] | str | None) -> SpeculativeConfig | None:
    """vLLM's --speculative-config (a dict or its JSON text) as a SpeculativeConfig; None for
    none. Bad values raise ConfigError naming `speculative_config.<key>`."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as err:
            raise ConfigError(FIELD, f"not JSON: {err.msg}") from None
    if not isinstance(value, dict):
        raise ConfigError(FIELD, f"expected a JSON object, got {value!r:.80}")
    method, model = _method(value)
    k = _int(value, "num_speculative_tokens", 1)
    if k is None:
        raise ConfigError(f"{FIELD}.num_speculative_tokens", "missing (an integer >= 1)")
    lookup_max, lookup_min = _lookup(value, method)
    return SpeculativeConfig(
        method=method, num_speculative_tokens=k, model=model,
        draft_tensor_parallel_size=_int(value, "draft_tensor_parallel_size", 1),
        prompt_lookup_max=lookup_max, prompt_lookup_min=lookup_min,
        num_speculative_tokens_per_batch_size=_per_batch_size(value),
        acceptance_rates=_rates(value, k),
        num_nextn_predict_layers=_int(value, "num_nextn_predict_layers", 1) or 1)


def _method(value: dict[str, Any]) -> tuple[str, str | None]:
    """(method, model) as SpeculativeConfig.__post_init__ infers them: a missing method is
    "ngram" for the model "ngram"/"[ngram]", else "draft_model"; "[ngram]" is "ngram"; every
    MTP model type is "mtp"."""
    method, model = value.get("method"), value.get("model")
    if model is not None and not isinstance(model, str):
        raise ConfigError(f"{FIELD}.model", f"expected a string, got {model!r:.80}")
    if method is None:
        if model is None:
            raise ConfigError(f"{FIELD}.method", "missing (give method or model)")
        method = "ngram" if model in ("ngram", "[ngram]") else "draft_model"
    if not isinstance(method, str):
        raise ConfigError(f"{FIELD}.method", f"expected a string, got {method!r:.80}")
    method = "ngram" if method == "[ngram]" else "mtp" if method in MTP_ALIASES else method
    if method not in METHODS:
        raise ConfigError(f"{FIELD}.method", f"must be one of {', '.join(METHODS)}; "
                          f"got {method!r:.80}")
    if method == "draft_model" and model is None:
        raise ConfigError(f"{FIELD}.model", "a draft_model needs the draft's model id")
    if model is None and method in ("ngram", "ngram_gpu", "suffix"):
        model = method  # __post_init__ names the model after these model-free proposers
    return method, model


def _int(value: dict[str, Any], key: str, low: int) -> int | None:
    got = value.get(key)
    if got is None:
        return None
    if not isinstance(got, int) or isinstance(got, bool):
        raise ConfigError(f"{FIELD}.{key}", f"expected an integer, got {got!r:.80}")
    if got < low:
        raise ConfigError(f"{FIELD}.{key}", f"must be at least {low}, got {got}")
    return got


def _lookup(value: dict[str, Any], method: str) -> tuple[int | None, int | None]:
    """prompt_lookup_max/min as __post_init__ settles them for ngram: both default to 5, one
    given sets the other, min <= max; other methods set them to 0 there (None here)."""
    high, low = _int(value, "prompt_lookup_max", 1), _int(value, "prompt_lookup_min", 1)
    if method not in ("ngram", "ngram_gpu"):
        return high, low
    if high is None and low is None:
        return NGRAM_DEFAULT_LOOKUP, NGRAM_DEFAULT_LOOKUP
    high, low = high if high is not None else low, low if low is not None else high
    if low is not None and high is not None and low > high:
        raise ConfigError(f"{FIELD}.prompt_lookup_min",
                          f"must be <= prompt_lookup_max={high}, got {low}")
    return high, low


def _per_batch_size(value: dict[str, Any]) -> tuple[tuple[int, int, int], ...] | None:
    """As vllm/v1/spec_decode/dynamic/utils.py validate_and_normalize_dynamic_sd_schedule
    checks it: (start, end, K) entries, 0 < start <= end, K >= 0, sorted by start."""
    key = f"{FIELD}.num_speculative_tokens_per_batch_size"
    got = value.get("num_speculative_tokens_per_batch_size")
    if got is None:
        return None
    if not isinstance(got, list) or not got:
        raise ConfigError(key, "expected a non-empty list of [start, end, k] entries")
    out = []
    for entry in got:
        if (not isinstance(entry, list | tuple) or len(entry) != 3
                or not all(isinstance(x, int) and not isinstance(x, bool) for x in entry)):
            raise ConfigError(key, f"each entry must be [start, end, k], got {entry!r:.80}")
        start, end, k = entry
        if not 0 < start <= end or k < 0:
            raise ConfigError(key, f"need 0 < start <= end and k >= 0, got {list(entry)}")
        out.append((start, end, k))
    return tuple(sorted(out))


def _rates(value: dict[str, Any], k: int) -> tuple[float, ...] | None:
    """ServeScope's own per-position acceptance rates: up to K numbers in [0, 1]."""
    key = f"{FIELD}.acceptance_rates"
    got = value.get("acceptance_rates")
    if got is None:
        return None
    if not isinstance(got, list) or not 1 <= len(got) <= k:
        raise ConfigError(key, f"expected a list of 1 to {k} numbers")
    for rate in got:
        if (not isinstance(rate, int | float) or isinstance(rate, bool)
                or not math.isfinite(rate) or not 0 <= rate <= 1):
            raise ConfigError(key, f"each rate must be in [0, 1], got {rate!r:.80}")
    return tuple(float(rate) for rate in got)
