"""Step time from model geometry and GPU specs (a calibrated roofline), and KV capacity as vLLM
sizes it. `make_step_time(config)` gives the engine's StepTimeFn; `num_gpu_blocks(config)` the pool.

One step runs every scheduled token through the model once:
  linear layers  max(FLOPs / effective peak, weight bytes / effective bandwidth)
  LM head        the same, for one row per scheduled request
  attention      per request max(causal FLOPs / peak, KV bytes read / bandwidth)
  all-reduce     2 per layer when tensor parallel: the link's latency (NVLink, PCIe, xGMI) +
                 ring traffic over its bandwidth
  overheads      a fixed cost per step plus a cost per scheduled request (scheduling, sampling)
MoE steps read the shared weights plus the experts the batch routes to (expected distinct
experts under uniform top-k routing). The API server's own time per request is not a step cost:
`frontend_ms` gives it, and the engine adds it to each request's TTFT and E2E latency.
"""

from __future__ import annotations

import dataclasses

from servescope.core import catalog, step_cost
from servescope.core.catalog import Calibration
from servescope.core.config import ConfigError, EngineConfig
from servescope.core.drafter_cost import DrafterCost, SpeculativeStepTime
from servescope.core.hardware import ACTIVATION_BYTES, GIB, Hardware, resolve
from servescope.core.step_cost import (
    RooflineStepTime,
    coefficients,
    decode_step_ms,
    experts_touched,
    frontend_ms,
)
from servescope.core.step_time import StepTimeFn

__all__ = ["Hardware", "coefficients", "decode_step_ms", "experts_touched", "frontend_ms",
           "make_step_time",
           "memory_breakdown", "not_modelled", "num_gpu_blocks", "resolve", "with_derived_blocks"]


def make_step_time(config: EngineConfig, calibration: Calibration | None = None) -> StepTimeFn:
    """The engine's StepTimeFn for this config (milliseconds a step); with a speculative
    config, the verify pass plus the drafter (core/drafter_cost.py). `calibration` replaces
    the GPU's fitted constants (the fitting procedure tries candidates this way)."""
    target = step_cost.make_step_time(config, calibration)
    spec = config.speculative
    if spec is None:
        return target
    assert isinstance(target, RooflineStepTime)
    hw = resolve(config)
    if calibration is not None:
        hw = dataclasses.replace(hw, calibration=calibration)
    try:
        drafter = DrafterCost(spec.method, spec.num_speculative_tokens, hw, spec.model,
                              spec.draft_tensor_parallel_size)
    except ConfigError as err:
        raise ConfigError("speculative_config.model", str(err)) from err
    return SpeculativeStepTime(target, drafter)


def weight_bytes_per_gpu(hw: Hardware) -> float:
    """Linear layers in the weight dtype, embedding and LM head in 16-bit, all split over TP."""
    m = hw.model
    linear = (m.always_read_params() * hw.weight_bytes
              + m.routed_expert_params() * hw.expert_weight_bytes)
    return (linear + m.embedding_params * ACTIVATION_BYTES) / hw.tensor_parallel_size


def activation_reserve_bytes(hw: Hardware, max_num_batched_tokens: int) -> float:
    """The profile run's peak: one forward pass of max_num_batched_tokens tokens."""
    m, mem = hw.model, catalog.MEMORY
    intermediate = m.intermediate_size * m.num_experts_per_tok / hw.tensor_parallel_size
    per_token = (mem["activation_intermediate_multiple"] * intermediate
                 + mem["activation_hidden_multiple"] * m.hidden_size) * ACTIVATION_BYTES
    return float(max_num_batched_tokens * per_token)


def memory_breakdown(config: EngineConfig) -> dict[str, float | int]:
    """vLLM's KV sizing in GiB, per GPU: budget - weights - reserve = KV, cut into blocks."""
    hw = resolve(config)
    mem = catalog.MEMORY
    budget = config.gpu_memory_utilization * hw.gpu.memory_gib_visible * GIB
    weights = weight_bytes_per_gpu(hw)
    non_torch = mem["non_torch_gib"] * GIB
    if hw.tensor_parallel_size > 1:
        non_torch += mem["tensor_parallel_extra_gib"] * GIB
    activation = activation_reserve_bytes(hw, config.max_num_batched_tokens)
    kv_per_token = hw.model.kv_bytes_per_token(hw.kv_element_bytes, hw.tensor_parallel_size)
    block_bytes = config.block_size * kv_per_token
    available = budget - weights - non_torch - activation
    blocks = int(available // block_bytes) if available > 0 else 0
    return {
        "total_gib": hw.gpu.memory_gib_visible, "budget_gib": budget / GIB,
        "weights_gib": weights / GIB, "non_torch_gib": non_torch / GIB,
        "activation_gib": activation / GIB, "kv_cache_gib": max(available, 0.0) / GIB,
        "kv_bytes_per_token": kv_per_token, "block_bytes": block_bytes,
        # both count block 0, the null block, as vLLM's "GPU KV cache size" log line does
        "num_gpu_blocks": blocks, "kv_capacity_tokens": blocks * config.block_size,
    }


def num_gpu_blocks(config: EngineConfig) -> int:
    """Blocks vLLM would allocate (block 0, the null block, included); refuses what won't fit."""
    b = memory_breakdown(config)
    if b["num_gpu_blocks"] < 2:
        hw = resolve(config)
        raise ConfigError("model", (
            f"{hw.model.name} does not fit: weights take {b['weights_gib']:.1f} GiB per GPU "
            f"(TP {hw.tensor_parallel_size}, {hw.weight_bytes}-byte weights), activations "
            f"{b['activation_gib']:.2f} GiB and non-torch memory {b['non_torch_gib']:.2f} GiB, "
            f"but {hw.gpu.key} offers "
            f"{b['budget_gib']:.1f} GiB ({config.gpu_memory_utilization} x "
            f"{b['total_gib']:.2f} GiB); try FP8, more GPUs or a larger GPU"))
    max_len = config.max_model_len or resolve(config).model.max_position_embeddings
    if max_len > b["kv_capacity_tokens"]:
        need = max_len * b["kv_bytes_per_token"] / GIB
        raise ConfigError("max_model_len", (
            f"one request of max_model_len {max_len} needs {need:.2f} GiB of KV cache but only "
            f"{b['kv_cache_gib']:.2f} GiB is left "
            f"({b['kv_capacity_tokens']} tokens); lower max_model_len"))
    return int(b["num_gpu_blocks"])


def with_derived_blocks(config: EngineConfig) -> EngineConfig:
    if config.num_gpu_blocks is not None:
        return config
    return config.replace(num_gpu_blocks=num_gpu_blocks(config))




def not_modelled(config: EngineConfig) -> list[str]:
    """What of this priced config the simulator leaves out, one sentence each (the session,
    the config panel and `sim` show them)."""
    notes = []
    if config.model and not config.model_config:
        model_id, _ = catalog.resolve_model(config.model)
        if model_id in catalog.MODEL_NOT_MODELLED:
            notes.append(f"{model_id}: {catalog.MODEL_NOT_MODELLED[model_id]}")
    if config.data_parallel_size > 1:
        notes.append(f"data_parallel_size {config.data_parallel_size}: a session runs one "
                     "engine with every request; `servescope sim` deals them round-robin over "
                     "the ranks (vLLM balances by load)")
    return notes
