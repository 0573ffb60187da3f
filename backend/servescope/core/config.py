"""The engine configuration, with vLLM's engine-argument names, and its validation."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from servescope.core.config_error import ConfigError as ConfigError  # re-exported
from servescope.core.speculative import SpeculativeConfig, parse_speculative_config

ALLOCATORS = ("paged", "max", "pow2", "oracle")
# vLLM's --dtype, --kv-cache-dtype and --quantization values the cost model prices.
DTYPE_ALIASES = {"auto": "auto", "bfloat16": "bfloat16", "bf16": "bfloat16", "float16": "float16",
                 "half": "float16", "fp16": "float16"}
KV_DTYPE_ALIASES = {"auto": "auto", "bfloat16": "bfloat16", "float16": "float16",
                    "fp8": "fp8", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8"}
QUANTIZATIONS = ("fp8", "nvfp4")
SCHEDULING_POLICIES = ("fcfs", "priority")
# the batching policies, in the order lists show them; core/scheduler/make.py maps each to its
# scheduler class (tests/core/test_policies.py keeps the two equal)
POLICIES = ("vllm-v1", "vllm-v0", "static", "naive")
# the routers a fleet picks a replica with; core/routers/make.py maps each to its class
# (tests/core/test_routers.py keeps the two equal)
ROUTERS = ("round-robin", "random", "least-requests", "least-kv", "shortest-queue", "session")
# llm-d's endpoint picker scrapes each vLLM pod's /metrics this often: gateway-api-inference-
# extension pkg/epp/server/runserver.go, DefaultRefreshMetricsInterval = 50 * time.Millisecond
SCRAPE_INTERVAL_MS = 50.0
# the keys that shape a fleet rather than one engine (a replica_configs entry cannot set them)
FLEET_KEYS = ("replicas", "router", "router_config", "scrape_interval_ms", "replica_configs")


def _field(default: Any, help: str, **rules: Any) -> Any:
    return dataclasses.field(default=default, metadata={"help": help, **rules})


@dataclass(frozen=True)
class EngineConfig:
    """Scheduler, KV cache and (optionally) hardware settings of one simulated engine.

    `num_gpu_blocks` includes vLLM's reserved null block 0, so N blocks give N - 1 usable ones.
    When it is None it is derived from model, GPU and memory settings by the cost model.
    Each field's bounds, choices and help live in its metadata: `validate` checks them and
    `field_schema` serves them to the page's form.
    """

    block_size: int = _field(16, "tokens per KV block", min=1, pow2=True)
    num_gpu_blocks: int | None = _field(
        None, "KV blocks incl. the null block; empty = sized from model and gpu memory", min=2)
    max_num_seqs: int = _field(256, "--max-num-seqs: requests running at once", min=1)
    max_num_batched_tokens: int = _field(2048, "the token budget per step", min=1)
    enable_chunked_prefill: bool = _field(True, "--enable-chunked-prefill")
    long_prefill_token_threshold: int = _field(0, "0 = no cap per chunk", min=0)
    enable_prefix_caching: bool = _field(True, "--enable-prefix-caching")
    max_model_len: int | None = _field(
        None, "--max-model-len; empty = the model's max_position_embeddings", min=2)
    scheduler_reserve_full_isl: bool = _field(
        True, "admission checks blocks for the whole prompt, not the first chunk")
    watermark: float = _field(0.0, "free-block share kept back at admission", min=0.0, lt=1.0)
    scheduling_policy: str = _field("fcfs", "--scheduling-policy", choices=SCHEDULING_POLICIES)
    async_scheduling: bool = _field(
        False, "--async-scheduling: vLLM's AsyncScheduler plans step N + 1 while step N runs, so "
        "a request's blocks are held one schedule longer; vllm serve turns it on by default")
    policy: str = _field("vllm-v1", "the batching policy", choices=POLICIES)
    allocator: str = _field("paged", "paged KV blocks, or a contiguous reservation",
                            choices=ALLOCATORS)
    static_batch_size: int = _field(8, "static batching: requests a batch", min=1)
    static_window_s: float | None = _field(
        None, "static batching: seconds a batch waits to fill", min=0.0)
    model: str | None = _field(
        None, "--model: a Hugging Face id from the catalog; with a gpu, the cost model prices "
        "each step, and sizes the KV pool when num_gpu_blocks is empty", catalog="models")
    gpu: str | None = _field(None, "the GPU each tensor-parallel rank runs on (catalog short "
                             "name)", catalog="gpus")
    tensor_parallel_size: int = _field(1, "--tensor-parallel-size", min=1)
    dtype: str = _field("auto", "--dtype of activations and unquantized weights; auto = the "
                        "checkpoint's", choices=tuple(DTYPE_ALIASES))
    quantization: str | None = _field(
        None, "--quantization fp8: 1-byte linear-layer weights; nvfp4: 4.5-bit (Blackwell only); "
        "none: weights in dtype or the checkpoint's own format", choices=QUANTIZATIONS)
    kv_cache_dtype: str = _field("auto", "--kv-cache-dtype: auto = dtype; fp8 halves the bytes "
                                 "a token's KV takes", choices=tuple(KV_DTYPE_ALIASES))
    gpu_memory_utilization: float = _field(0.9, "--gpu-memory-utilization: fraction in (0, 1]",
                                           gt=0.0, max=1.0)
    data_parallel_size: int = _field(
        1, "--data-parallel-size: replicas of the TP group; a session runs one engine with every "
        "request, `servescope sim` deals them over the ranks", min=1)
    replicas: int = _field(
        1, "replicas of the engine behind a router (core/fleet.py); not with data_parallel_size "
        "> 1", min=1, hidden=True)
    router: str = _field("round-robin", "how the fleet's router picks a replica per request",
                         choices=ROUTERS, hidden=True)
    router_config: dict[str, Any] | None = _field(
        None, "the router's own settings (each router documents its keys)", hidden=True)
    scrape_interval_ms: float = _field(
        SCRAPE_INTERVAL_MS, "how stale the router's view of each replica's metrics is: it "
        "scrapes them this often (llm-d's endpoint picker default, 50 ms; 0: every arrival)",
        min=0.0, hidden=True)
    replica_configs: list[dict[str, Any]] | None = _field(
        None, "mixed replicas: one object of engine-config overrides per replica (as many as "
        "replicas), each over this config", hidden=True)
    model_config: dict[str, Any] | None = _field(
        None, "a Hugging Face config.json's values, for a model outside the catalog", hidden=True)
    frontend_overhead_ms: float | None = _field(
        None, "the API server's time per request, added to TTFT and E2E; empty = the cost "
        "model's figure (0 when unpriced)", min=0.0)
    speculative_config: dict[str, Any] | None = _field(
        None, "--speculative-config: vLLM's JSON, e.g. {\"method\": \"eagle3\", "
        "\"num_speculative_tokens\": 3}; empty = no speculative decoding", hidden=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EngineConfig:
        known = {f.name: f for f in dataclasses.fields(cls)}
        for key in data:
            if key not in known:
                raise ConfigError(key, "unknown config key")
        config = cls(**data)
        config.validate()
        return config

    def replace(self, **changes: Any) -> EngineConfig:
        config = dataclasses.replace(self, **changes)
        config.validate()
        return config

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @cached_property
    def speculative(self) -> SpeculativeConfig | None:
        """speculative_config parsed (validate() has checked it); None without speculation."""
        return parse_speculative_config(self.speculative_config)

    def validate(self) -> None:
        _check_types(self)
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is not None:
                check_rules(f.name, value, f.metadata)
        if self.async_scheduling and self.policy != "vllm-v1":
            raise ConfigError("async_scheduling", "only the vllm-v1 policy schedules "
                              f"asynchronously (policy is {self.policy!r})")
        if self.speculative is not None and self.policy != "vllm-v1":
            raise ConfigError("speculative_config", "only the vllm-v1 policy decodes "
                              f"speculatively (policy is {self.policy!r})")
        _check_fleet(self)
        if self.allocator != "paged" and self.policy == "vllm-v1" and self.enable_prefix_caching:
            raise ConfigError("allocator", "contiguous allocators cannot share prefix blocks; "
                              "set enable_prefix_caching to false")


def field_schema() -> list[dict[str, Any]]:
    """Every field as the page's form takes it: name, kind, default, nullable, bounds (min,
    max, gt, lt, pow2), options (the canonical choices) or catalog, and help."""
    out = []
    for f in dataclasses.fields(EngineConfig):
        if f.metadata.get("hidden"):  # set from files and the cost model, not the form
            continue
        type_name = str(f.type)
        meta = dict(f.metadata)
        meta.pop("hidden", None)
        choices = _choices(meta)
        kind = ("catalog" if "catalog" in meta else "choice" if choices else
                type_name.split(" ")[0])
        entry: dict[str, Any] = {"name": f.name, "kind": kind, "default": f.default,
                                 "nullable": "None" in type_name, "help": meta.pop("help")}
        entry.update({k: v for k, v in meta.items() if k != "choices"})
        if choices:
            entry["options"] = list(dict.fromkeys(_CANONICAL.get(f.name, {}).get(c, c)
                                                  for c in choices))
        out.append(entry)
    return out


_CANONICAL = {"dtype": DTYPE_ALIASES, "kv_cache_dtype": KV_DTYPE_ALIASES}


def _choices(meta: Mapping[str, Any]) -> tuple[str, ...]:
    choices = meta.get("choices", ())
    return tuple(choices() if callable(choices) else choices)


def check_rules(name: str, value: Any, meta: Mapping[str, Any]) -> None:
    """`value` within a field's rules (choices, finite, min/gt, max/lt, pow2), or ConfigError."""
    choices = _choices(meta)
    if choices:
        _one_of(name, choices, value.lower() if name in _CANONICAL else value)
        return
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(name, f"must be a finite number, got {value}")
    low, high = meta.get("min", meta.get("gt")), meta.get("max", meta.get("lt"))
    too_low = low is not None and (value <= low if "gt" in meta else value < low)
    too_high = high is not None and (value >= high if "lt" in meta else value > high)
    if too_low or too_high:
        raise ConfigError(name, f"must be {_span(meta)}, got {_num(value)}")
    if meta.get("pow2") and value & (value - 1):
        raise ConfigError(name, f"must be a power of two, got {_num(value)}")


def _span(meta: Mapping[str, Any]) -> str:
    """The allowed range in words; state/fields.js writes the same for the page."""
    if "min" in meta and not any(k in meta for k in ("max", "lt")):
        return f"at least {_num(meta['min'])}"
    if "gt" in meta and not any(k in meta for k in ("max", "lt")):
        return f"greater than {_num(meta['gt'])}"
    left = f"[{_num(meta['min'])}" if "min" in meta else f"({_num(meta['gt'])}"
    right = f"{_num(meta['max'])}]" if "max" in meta else f"{_num(meta['lt'])})"
    return f"in {left}, {right}"


def _num(value: float) -> str:
    """As JavaScript's String(number) writes it: 1.0 -> "1", 0.9 -> "0.9"."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _check_types(config: EngineConfig) -> None:
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        expected = f.type if isinstance(f.type, str) else str(f.type)
        if value is None:
            if "None" not in expected:
                raise ConfigError(f.name, "must not be null")
            continue
        if expected.startswith("bool"):
            ok = isinstance(value, bool)
        elif expected.startswith("int"):
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif expected.startswith("dict"):
            ok = isinstance(value, dict)
        elif expected.startswith("list"):
            ok = isinstance(value, list)
        elif expected.startswith("float"):
            ok = isinstance(value, int | float) and not isinstance(value, bool)
        else:
            ok = isinstance(value, str)
        if not ok:
            raise ConfigError(f.name, f"expected {expected.split(' ')[0]}, got {value!r}")


def _check_fleet(config: EngineConfig) -> None:
    if config.replicas > 1 and config.data_parallel_size > 1:
        raise ConfigError("replicas", "give replicas (a router's fleet) or data_parallel_size "
                          "(vLLM's own balancing), not both above 1")
    overrides = config.replica_configs
    if overrides is None:
        return
    if len(overrides) != config.replicas:
        raise ConfigError("replica_configs", f"{len(overrides)} entries for {config.replicas} "
                          "replicas (give one per replica)")
    known = {f.name for f in dataclasses.fields(EngineConfig)} - set(FLEET_KEYS)
    for entry in overrides:
        if not isinstance(entry, dict):
            raise ConfigError("replica_configs", f"each entry is an object, got {entry!r:.80}")
        for key in entry:
            if key not in known:
                raise ConfigError("replica_configs", f"{str(key)[:80]!r} is not an engine "
                                  "setting a replica may override")


def _one_of(name: str, options: tuple[str, ...], value: Any) -> None:
    if value not in options:
        raise ConfigError(name, f"must be one of {', '.join(options)}; got {value!r}")
