"""The engine configuration, with vLLM's engine-argument names, and its validation."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from servescope.core.scheduler import policy_names

ALLOCATORS = ("paged", "max", "pow2", "oracle")
# vLLM's --dtype, --kv-cache-dtype and --quantization values the cost model prices.
DTYPE_ALIASES = {"auto": "auto", "bfloat16": "bfloat16", "bf16": "bfloat16", "float16": "float16",
                 "half": "float16", "fp16": "float16"}
KV_DTYPE_ALIASES = {"auto": "auto", "bfloat16": "bfloat16", "float16": "float16",
                    "fp8": "fp8", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8"}
QUANTIZATIONS = ("fp8",)
SCHEDULING_POLICIES = ("fcfs", "priority")


class ConfigError(ValueError):
    """A config value out of range; `field` names the offending key."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


@dataclass(frozen=True)
class EngineConfig:
    """Scheduler, KV cache and (optionally) hardware settings of one simulated engine.

    `num_gpu_blocks` includes vLLM's reserved null block 0, so N blocks give N - 1 usable ones.
    When it is None it is derived from model, GPU and memory settings by the cost model.
    """

    block_size: int = 16
    num_gpu_blocks: int | None = None
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 2048
    enable_chunked_prefill: bool = True
    long_prefill_token_threshold: int = 0
    enable_prefix_caching: bool = True
    max_model_len: int | None = None
    scheduler_reserve_full_isl: bool = True
    watermark: float = 0.0
    scheduling_policy: str = "fcfs"
    policy: str = "vllm-v1"
    allocator: str = "paged"
    static_batch_size: int = 8
    static_window_s: float | None = None
    model: str | None = None
    gpu: str | None = None
    tensor_parallel_size: int = 1
    dtype: str = "auto"
    quantization: str | None = None
    kv_cache_dtype: str = "auto"
    gpu_memory_utilization: float = 0.9

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

    def validate(self) -> None:
        _check_types(self)
        if self.block_size < 1 or self.block_size & (self.block_size - 1):
            raise ConfigError("block_size",
                              f"must be a positive power of two, got {self.block_size}")
        if self.num_gpu_blocks is not None and self.num_gpu_blocks < 2:
            raise ConfigError("num_gpu_blocks", "must be at least 2 (block 0 is reserved)")
        _at_least(self, "max_num_seqs", 1)
        _at_least(self, "max_num_batched_tokens", 1)
        _at_least(self, "long_prefill_token_threshold", 0)
        _at_least(self, "static_batch_size", 1)
        _at_least(self, "tensor_parallel_size", 1)
        if self.max_model_len is not None:
            _at_least(self, "max_model_len", 2)
        if not 0.0 <= self.watermark < 1.0:
            raise ConfigError("watermark", f"must be in [0, 1), got {self.watermark}")
        if not 0.0 < self.gpu_memory_utilization <= 1.0:
            raise ConfigError("gpu_memory_utilization", "must be in (0, 1]")
        _one_of(self, "policy", policy_names())
        _one_of(self, "allocator", ALLOCATORS)
        _one_of(self, "scheduling_policy", SCHEDULING_POLICIES)
        _one_of(self, "dtype", tuple(DTYPE_ALIASES), self.dtype.lower())
        _one_of(self, "kv_cache_dtype", tuple(KV_DTYPE_ALIASES), self.kv_cache_dtype.lower())
        if self.quantization is not None:
            _one_of(self, "quantization", QUANTIZATIONS)
        if self.allocator != "paged" and self.policy == "vllm-v1" and self.enable_prefix_caching:
            raise ConfigError("allocator", "contiguous allocators cannot share prefix blocks; "
                              "set enable_prefix_caching to false")


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
        elif expected.startswith("float"):
            ok = isinstance(value, int | float) and not isinstance(value, bool)
        else:
            ok = isinstance(value, str)
        if not ok:
            raise ConfigError(f.name, f"expected {expected.split(' ')[0]}, got {value!r}")


def _at_least(config: EngineConfig, name: str, low: int) -> None:
    value = getattr(config, name)
    if value < low:
        raise ConfigError(name, f"must be at least {low}, got {value}")


def _one_of(config: EngineConfig, name: str, options: tuple[str, ...],
            value: Any = None) -> None:
    """`value` (default: the field's own) must be one of `options`."""
    value = getattr(config, name) if value is None else value
    if value not in options:
        raise ConfigError(name, f"must be one of {', '.join(options)}; got {value!r}")
