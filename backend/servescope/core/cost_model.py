"""Step time from model geometry and GPU specs (a calibrated roofline), and KV capacity as vLLM
sizes it. `make_step_time(config)` gives the engine's StepTimeFn; `num_gpu_blocks(config)` the pool.

One step runs every scheduled token through the model once:
  linear layers  max(FLOPs / effective peak, weight bytes / effective bandwidth)
  LM head        the same, for one row per scheduled request
  attention      per request max(causal FLOPs / peak, KV bytes read / bandwidth)
  all-reduce     2 per layer when tensor parallel: latency + ring traffic over the interconnect
  overheads      a fixed cost per step plus a cost per scheduled request (scheduling, sampling)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from servescope.core import catalog
from servescope.core.catalog import Calibration, GpuSpec, ModelSpec
from servescope.core.config import ConfigError, EngineConfig
from servescope.core.step_time import StepTimeFn

GIB = float(1 << 30)
ACTIVATION_BYTES = 2  # activations, embeddings and the LM head stay in 16-bit under FP8 weights


@dataclass(frozen=True)
class Hardware:
    """A config's model, GPU and number formats, resolved against the catalogs."""

    model: ModelSpec
    gpu: GpuSpec
    calibration: Calibration
    tensor_parallel_size: int
    activation_dtype: str
    weight_bytes: int  # bytes per linear-layer weight: 2 (16-bit) or 1 (fp8)
    kv_element_bytes: int

    @property
    def linear_tflops(self) -> float:
        """FP8 weights run FP8 GEMMs where the GPU has FP8 tensor cores; elsewhere (A100) vLLM
        upcasts them in a weight-only kernel (Marlin), so the math runs at 16-bit rates."""
        if self.weight_bytes == 1 and self.gpu.fp8_tflops is not None:
            return self.gpu.fp8_tflops
        return self.gpu.bf16_tflops


def resolve(config: EngineConfig) -> Hardware:
    if not config.model or not config.gpu:
        raise ConfigError("model", "the cost model needs both model and gpu")
    model_id, fp8_checkpoint = catalog.resolve_model(config.model)
    model = catalog.MODELS[model_id]
    gpu = catalog.gpu(config.gpu)
    tp = config.tensor_parallel_size
    heads, kv_heads = model.num_attention_heads, model.num_key_value_heads
    if heads % tp or (kv_heads % tp and tp % kv_heads):
        raise ConfigError("tensor_parallel_size", f"{model_id} has {heads} attention and "
                          f"{kv_heads} KV heads; TP {tp} does not divide them")
    quantization = config.quantization or ("fp8" if fp8_checkpoint else None)  # validated
    activation = catalog.dtype_name(config.dtype, model)
    return Hardware(model=model, gpu=gpu, calibration=catalog.calibration(gpu.key),
                    tensor_parallel_size=tp, activation_dtype=activation,
                    weight_bytes=1 if quantization == "fp8" else catalog.DTYPE_BYTES[activation],
                    kv_element_bytes=catalog.kv_dtype_bytes(config.kv_cache_dtype, activation))


# --- memory ---------------------------------------------------------------------------------

def weight_bytes_per_gpu(hw: Hardware) -> float:
    """Linear layers in the weight dtype, embedding and LM head in 16-bit, all split over TP."""
    m = hw.model
    linear = m.num_hidden_layers * m.layer_params() * hw.weight_bytes
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


# --- time -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Coefficients:
    """Everything a step needs, folded into seconds per unit so a call is a few numpy ops."""

    s_per_linear_token: float  # linear-layer FLOPs of one token / effective peak
    s_dense_weights: float  # reading every non-expert linear weight once
    s_per_expert: float  # reading one expert's weights in every layer (0 for dense models)
    num_experts: int
    experts_per_tok: int
    s_per_head_row: float  # LM head FLOPs for one request
    s_head_weights: float
    s_per_attention_pair: float  # causal attention FLOPs of one (query, key) pair, all layers
    s_per_kv_token: float  # reading one token's K and V in every layer
    s_allreduce_fixed: float  # latency of the step's all-reduces (0 at TP 1)
    s_allreduce_per_token: float
    s_step: float
    s_per_request: float


def coefficients(hw: Hardware) -> _Coefficients:
    m, g, c, tp = hw.model, hw.gpu, hw.calibration, hw.tensor_parallel_size
    bandwidth = g.memory_bandwidth_gb_s * 1e9 * c.bandwidth_efficiency
    linear_rate = hw.linear_tflops * 1e12 * c.compute_efficiency
    rate16 = g.bf16_tflops * 1e12 * c.compute_efficiency
    layers = m.num_hidden_layers
    dense_params = layers * (m.layer_params() - (m.num_local_experts * m.expert_params
                                                 if m.is_moe else 0))
    head = m.vocab_size * m.hidden_size / tp
    fixed, per_token = 0.0, 0.0
    if tp > 1:
        fixed = 2 * layers * catalog.INTERCONNECT["allreduce_latency_us"] * 1e-6
        ring = 2 * (tp - 1) / tp * m.hidden_size * ACTIVATION_BYTES
        per_token = 2 * layers * ring / (g.interconnect_gb_s * 1e9)
    return _Coefficients(
        s_per_linear_token=2 * layers * m.layer_params(active=True) / tp / linear_rate,
        s_dense_weights=dense_params * hw.weight_bytes / tp / bandwidth,
        s_per_expert=(layers * m.expert_params * hw.weight_bytes / tp / bandwidth
                      if m.is_moe else 0.0),
        num_experts=m.num_local_experts, experts_per_tok=m.num_experts_per_tok,
        s_per_head_row=2 * head / rate16, s_head_weights=head * ACTIVATION_BYTES / bandwidth,
        s_per_attention_pair=4 * m.head_dim * (m.num_attention_heads // tp) * layers / rate16,
        s_per_kv_token=m.kv_bytes_per_token(hw.kv_element_bytes, tp) / bandwidth,
        s_allreduce_fixed=fixed, s_allreduce_per_token=per_token,
        s_step=c.step_overhead_ms * 1e-3, s_per_request=c.per_request_overhead_ms * 1e-3,
    )


def experts_touched(num_tokens: int, num_experts: int, experts_per_tok: int) -> float:
    """Expected distinct experts a layer reads for num_tokens tokens under uniform routing."""
    return num_experts * (1.0 - (1.0 - experts_per_tok / num_experts) ** num_tokens)


def make_step_time(config: EngineConfig, calibration: Calibration | None = None) -> StepTimeFn:
    """The engine's StepTimeFn for this config: milliseconds for one step. `calibration`
    replaces the GPU's fitted constants (the fitting procedure tries candidates this way)."""
    hw = resolve(config)
    if calibration is not None:
        hw = dataclasses.replace(hw, calibration=calibration)
    return RooflineStepTime(coefficients(hw))


class RooflineStepTime:
    """The roofline priced per step; `decode_steps_ms` prices a run of decode-only steps at once,
    with the same floating-point operations in the same order (so the same bits)."""

    def __init__(self, k: _Coefficients) -> None:
        self.k = k
        self.fast_kv = max(k.s_per_attention_pair, k.s_per_kv_token)

    def _fixed_s(self, num_requests: int, tokens: int) -> float:
        """Linear layers and LM head: everything before attention."""
        k = self.k
        weights = k.s_dense_weights
        if k.s_per_expert:
            weights += k.s_per_expert * experts_touched(tokens, k.num_experts, k.experts_per_tok)
        seconds = max(tokens * k.s_per_linear_token, weights)
        seconds += max(num_requests * k.s_per_head_row, k.s_head_weights)
        return seconds

    def __call__(self, num_scheduled: np.ndarray, num_context: np.ndarray) -> float:
        k = self.k
        num_requests = len(num_scheduled)
        if num_requests == 0:
            return 0.0
        tokens = int(num_scheduled.sum())
        seconds = self._fixed_s(num_requests, tokens)
        if tokens == num_requests:  # all decodes: one query against context + 1 keys each
            seconds += self.fast_kv * (float(num_context.sum()) + num_requests)
        else:
            n = num_scheduled.astype(np.float64)
            c = num_context.astype(np.float64)
            pairs = n * c + n * (n + 1.0) * 0.5
            seconds += float(np.maximum(pairs * k.s_per_attention_pair,
                                        (c + n) * k.s_per_kv_token).sum())
        if k.s_allreduce_fixed:
            seconds += k.s_allreduce_fixed + tokens * k.s_allreduce_per_token
        seconds += k.s_step + num_requests * k.s_per_request
        return seconds * 1000.0

    def decode_steps_ms(self, num_requests: int, context_sums: np.ndarray) -> np.ndarray:
        """Each step of `num_requests` one-token decodes whose contexts sum to context_sums[j]."""
        k = self.k
        seconds = self._fixed_s(num_requests, num_requests) + self.fast_kv * (
            context_sums.astype(np.float64) + num_requests)
        if k.s_allreduce_fixed:
            seconds += k.s_allreduce_fixed + num_requests * k.s_allreduce_per_token
        seconds += k.s_step + num_requests * k.s_per_request
        out: np.ndarray = seconds * 1000.0
        return out


def decode_step_ms(config: EngineConfig, batch_size: int, context: int) -> float:
    """One decode step of batch_size requests that each hold `context` tokens."""
    fn = make_step_time(config)
    return fn(np.ones(batch_size, dtype=np.int64), np.full(batch_size, context, dtype=np.int64))
