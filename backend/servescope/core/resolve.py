"""A config resolved as vLLM 0.33 resolves its engine arguments: the settings given are kept, and
what is left out takes vLLM's default for the GPU, the model and the usage context. Every door
(the CLI's subcommands, each sweep point after its grid keys, the page's configure, uploads and
presets) runs this one function (a fleet's doors `resolve_fleet`, once per replica), so the
same settings give the same engine everywhere.

A key left out, or given as null where the field cannot be null, is not given (as vLLM's
Optional engine arguments are None until `create_engine_config` fills them). The rules, each
from vLLM 0.33:

- `EngineArgs.get_batch_defaults`: a device with >= 70 GiB that is not an A100 gets
  max_num_batched_tokens 8192 (API server) / 16384 (LLM class) and max_num_seqs 1024; any
  other, or none known, 2048 / 8192 and 256.
- `EngineArgs._set_default_max_num_seqs_and_batched_tokens_args`: a defaulted token budget is
  at least max_model_len when chunked prefill is off, then at most max_num_seqs *
  max_model_len; a defaulted max_num_seqs is at most the token budget.
- `VllmConfig.__post_init__`: async scheduling left unset is turned on unless something it
  cannot run with is set. `vllm serve` on a GPU is what a priced config (model and GPU) models,
  so it is on there for the vLLM V1 policy; a config with no GPU is vLLM's scheduler alone, as
  its own tests drive it (synchronously), and the contrast policies are not vLLM's.
- `VllmConfig._get_v2_model_runner_unsupported_features` and `__post_init__`'s
  `v1_async_sched_incompat`: Model Runner V2, 0.33's default, schedules every speculative
  method asynchronously (ngram included); the `suffix` and `custom_class` methods fall back to
  the V1 model runner, which turns async scheduling off for them, and refuses it when asked.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from servescope.core import catalog
from servescope.core.config import ConfigError, EngineConfig

USAGE_CONTEXTS = ("api_server", "llm_class")  # vLLM's UsageContext.OPENAI_API_SERVER, LLM_CLASS
BIG_GPU_GIB = 70  # get_batch_defaults: `device_memory >= 70 * GiB_bytes`, A100s excluded
# get_batch_defaults' tables: device class -> usage context -> max_num_batched_tokens
BATCHED_TOKENS = {"big": {"api_server": 8192, "llm_class": 16384},
                  "small": {"api_server": 2048, "llm_class": 8192}}
MAX_NUM_SEQS = {"big": 1024, "small": 256}  # the same for both usage contexts
# Memory the device reports (GiB) for GPUs outside the catalog, by name fragment; the most
# specific fragment first (vendors' datasheets less what the driver keeps).
GPU_MEMORY_GIB = (("a100-40", 39.4), ("a100", 79.2), ("h100", 79.2), ("h200", 139.8),
                  ("b200", 178.4), ("l40s", 44.4), ("l40", 44.4), ("l4", 22.0), ("a10", 22.0),
                  ("mi300x", 191.5), ("mi325x", 255.5), ("t4", 14.6))
# speculative methods Model Runner V2 cannot run (the V1 runner, then no async scheduling)
V1_RUNNER_SPEC_METHODS = ("suffix", "custom_class")
_NULLABLE = frozenset(f.name for f in fields(EngineConfig) if "None" in str(f.type))


@dataclass(frozen=True)
class Resolved:
    """The config an engine runs, and for each setting vLLM's default filled in, why."""

    config: EngineConfig
    defaults: dict[str, str] = field(default_factory=dict)


def resolve_config(given: Mapping[str, Any], usage_context: str = "api_server") -> Resolved:
    """`given` (EngineConfig field names) with vLLM 0.33's defaults for what it leaves out;
    ConfigError names a bad key or value."""
    if usage_context not in USAGE_CONTEXTS:
        raise ConfigError("usage_context", f"must be one of {', '.join(USAGE_CONTEXTS)}; "
                          f"got {usage_context!r}")
    values = {k: v for k, v in given.items() if v is not None or k in _NULLABLE}
    base = EngineConfig.from_dict(values)  # types and ranges checked before any arithmetic
    tokens, seqs, why = batch_defaults(base.gpu, usage_context)
    fills: dict[str, Any] = {}
    reasons: dict[str, str] = {}
    max_len = _max_model_len(base)
    if "max_num_seqs" not in values:
        fills["max_num_seqs"], reasons["max_num_seqs"] = seqs, why
    given_seqs = fills.get("max_num_seqs", base.max_num_seqs)
    if "max_num_batched_tokens" not in values:
        if not base.enable_chunked_prefill and max_len:
            tokens, why = max(tokens, max_len), f"{why}; chunked prefill off: >= max_model_len"
        if max_len and given_seqs * max_len < tokens:
            tokens, why = given_seqs * max_len, f"{why}; at most max_num_seqs * max_model_len"
        fills["max_num_batched_tokens"], reasons["max_num_batched_tokens"] = tokens, why
    budget = fills.get("max_num_batched_tokens", base.max_num_batched_tokens)
    if "max_num_seqs" not in values and seqs > budget:
        fills["max_num_seqs"] = budget
        reasons["max_num_seqs"] += "; at most max_num_batched_tokens"
    if "async_scheduling" not in values:
        fills["async_scheduling"], reasons["async_scheduling"] = _async_default(base)
    elif base.async_scheduling and (why_sync := speculative_sync_reason(base)):
        raise ConfigError("async_scheduling", f"vLLM 0.33 refuses it: {why_sync}")
    return Resolved(base.replace(**fills), reasons)


def resolve_fleet(given: Mapping[str, Any], usage_context: str = "api_server",
                  ) -> list[EngineConfig]:
    """One resolved config per replica: `given` alone, or with the replica's
    `replica_configs` entry over it (each resolved as its own settings ask: an H200 replica
    gets the H200's defaults beside an H100 one)."""
    base = resolve_config(given, usage_context).config
    if base.replica_configs is None:
        return [base] * base.replicas
    shared = {k: v for k, v in given.items() if k != "replica_configs"}
    return [resolve_config({**shared, **entry}, usage_context).config
            for entry in base.replica_configs]


def speculative_sync_reason(config: EngineConfig) -> str | None:
    """Why vLLM 0.33 cannot schedule this speculative config asynchronously, else None."""
    spec = config.speculative
    if spec is None or spec.method not in V1_RUNNER_SPEC_METHODS:
        return None
    return (f"speculative method {spec.method!r} runs on the V1 model runner (Model Runner V2 "
            "does not support it), which cannot schedule it asynchronously")


def batch_defaults(gpu: str | None, usage_context: str = "api_server") -> tuple[int, int, str]:
    """(max_num_batched_tokens, max_num_seqs, why) as vLLM's `get_batch_defaults` picks them
    for the device `gpu` (none given or unknown: what vLLM takes when it cannot ask the device,
    the smaller class)."""
    memory = gpu_memory_gib(gpu)
    a100 = _is_a100(gpu)
    big = memory is not None and memory >= BIG_GPU_GIB and not a100
    size = "big" if big else "small"
    if memory is None:
        why = f"GPU {'unknown' if gpu else 'not given'}: the < {BIG_GPU_GIB} GiB class"
    elif big:
        why = f"{gpu}: {memory:g} GiB >= {BIG_GPU_GIB} GiB and not an A100"
    else:
        why = f"{gpu}: {memory:g} GiB" + (" (A100s keep the smaller defaults)" if a100
                                          else f" < {BIG_GPU_GIB} GiB")
    return (BATCHED_TOKENS[size][usage_context], MAX_NUM_SEQS[size],
            f"vLLM's default for {why}, {usage_context}")


def gpu_memory_gib(gpu: str | None) -> float | None:
    """What the device reports, from the GPU catalog, else by a name fragment."""
    if not gpu:
        return None
    try:
        return float(catalog.gpu(gpu).memory_gib_visible)
    except ConfigError:
        pass
    name = gpu.lower().replace(" ", "-").replace("_", "-")
    return next((gib for fragment, gib in GPU_MEMORY_GIB if fragment in name), None)


def _is_a100(gpu: str | None) -> bool:
    try:
        return "a100" in catalog.gpu(gpu or "").name.lower()
    except ConfigError:
        return "a100" in (gpu or "").lower()


def _max_model_len(config: EngineConfig) -> int | None:
    """The context length vLLM's ModelConfig settles on: given, else the model's own (None
    when the model is not known here)."""
    if config.max_model_len is not None:
        return config.max_model_len
    if config.model_config is not None:
        value = config.model_config.get("max_position_embeddings")
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    try:
        return catalog.model(config.model).max_position_embeddings if config.model else None
    except ConfigError:
        return None


def _async_default(config: EngineConfig) -> tuple[bool, str]:
    if config.policy != "vllm-v1":
        return False, f"the {config.policy} policy is not vLLM's and schedules synchronously"
    if not (config.gpu and (config.model or config.model_config)):
        return False, "no model and GPU: vLLM's scheduler alone, driven synchronously"
    if why_sync := speculative_sync_reason(config):
        return False, why_sync
    return True, "vllm serve turns it on (VllmConfig.__post_init__)"
