"""Step time from model geometry and GPU specs: a calibrated roofline the engine calls as its
StepTimeFn (the terms are listed in servescope.core.cost_model's docstring)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from servescope.core.catalog import Calibration
from servescope.core.config import EngineConfig
from servescope.core.hardware import ACTIVATION_BYTES, Hardware, resolve
from servescope.core.step_time import StepTimeFn


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
    kv_bandwidth = g.memory_bandwidth_gb_s * 1e9 * (c.kv_bandwidth_efficiency
                                                    or c.bandwidth_efficiency)
    linear_rate = hw.linear_tflops * 1e12 * c.compute_efficiency
    rate16 = g.bf16_tflops * 1e12 * c.compute_efficiency
    layers = m.num_hidden_layers
    head = m.vocab_size * m.hidden_size / tp
    fixed, per_token = 0.0, 0.0
    if tp > 1:
        fixed = 2 * layers * c.allreduce_latency_us * 1e-6
        ring = 2 * (tp - 1) / tp * m.hidden_size * ACTIVATION_BYTES
        per_token = 2 * layers * ring / (g.interconnect_gb_s * 1e9)
    active = m.always_read_params() + m.routed_expert_params(active=True)
    return _Coefficients(
        s_per_linear_token=2 * active / tp / linear_rate,
        s_dense_weights=m.always_read_params() * hw.weight_bytes / tp / bandwidth,
        s_per_expert=(m.num_moe_layers * m.expert_params * hw.expert_weight_bytes / tp / bandwidth
                      if m.is_moe else 0.0),
        num_experts=m.num_local_experts, experts_per_tok=m.num_experts_per_tok,
        s_per_head_row=2 * head / rate16, s_head_weights=head * ACTIVATION_BYTES / bandwidth,
        s_per_attention_pair=(4 * m.attention_dim * (m.num_attention_heads // tp) * layers
                              / rate16),
        s_per_kv_token=m.kv_bytes_per_token(hw.kv_element_bytes, tp) / kv_bandwidth,
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
    """The roofline priced per step; `decode_steps_ms` prices a run of decode-only steps at once
    and `rows_ms` a step from plain lists, each with the same floating-point operations in the
    same order (so the same bits)."""

    def __init__(self, k: _Coefficients) -> None:
        self.k = k
        self.fast_kv = max(k.s_per_attention_pair, k.s_per_kv_token)
        self.pricers: dict[int, Callable[[int], float]] = {}  # decode_pricer's, by batch size

    def _fixed_s(self, num_requests: int, tokens: int, num_drafts: int = 0) -> float:
        """Linear layers and LM head: everything before attention. The LM head takes one row
        per request, plus one per draft token a verify pass scores (vLLM's logits_indices)."""
        k = self.k
        weights = k.s_dense_weights
        if k.s_per_expert:
            weights += k.s_per_expert * experts_touched(tokens, k.num_experts, k.experts_per_tok)
        seconds = max(tokens * k.s_per_linear_token, weights)
        seconds += max((num_requests + num_drafts) * k.s_per_head_row, k.s_head_weights)
        return seconds

    def _with_tail_ms(self, seconds: float, num_requests: int, tokens: int) -> float:
        """`seconds` (layers and attention) with the all-reduce and the step's own overhead
        added, in ms (what __call__ and rows_ms end with, in the same order)."""
        k = self.k
        if k.s_allreduce_fixed:
            seconds += k.s_allreduce_fixed + tokens * k.s_allreduce_per_token
        seconds += k.s_step + num_requests * k.s_per_request
        return seconds * 1000.0

    def __call__(self, num_scheduled: np.ndarray, num_context: np.ndarray,
                 num_drafts: int = 0) -> float:
        """num_drafts: draft tokens among the scheduled ones (a verify pass's extra rows)."""
        k = self.k
        num_requests = len(num_scheduled)
        if num_requests == 0:
            return 0.0
        tokens = int(num_scheduled.sum())
        seconds = self._fixed_s(num_requests, tokens, num_drafts)
        if tokens == num_requests:  # all decodes: one query against context + 1 keys each
            seconds += self.fast_kv * (float(num_context.sum()) + num_requests)
        else:
            n = num_scheduled.astype(np.float64)
            c = num_context.astype(np.float64)
            pairs = n * c + n * (n + 1.0) * 0.5
            seconds += float(np.maximum(pairs * k.s_per_attention_pair,
                                        (c + n) * k.s_per_kv_token).sum())
        return self._with_tail_ms(seconds, num_requests, tokens)

    def rows_ms(self, num_scheduled: list[int], num_context: list[int]) -> float:
        """__call__ (no drafts) on plain lists: the same floating-point operations in the same
        order, numpy's pairwise sum included (numpy_sum), so the same bits; cheaper than numpy
        calls for a step's few rows (the engine's unrecorded steps)."""
        k = self.k
        num_requests = len(num_scheduled)
        if num_requests == 0:
            return 0.0
        tokens = sum(num_scheduled)
        seconds = self._fixed_s(num_requests, tokens)
        if tokens == num_requests:
            seconds += self.fast_kv * (float(sum(num_context)) + num_requests)
        else:
            # a decode row's term is (c + 1) * fast_kv: n = 1 makes each product and sum of
            # the general term exact but c + 1, and rounding keeps max(x * a, x * b) = x * max
            fast_kv, s_pair, s_kv = self.fast_kv, k.s_per_attention_pair, k.s_per_kv_token
            terms = [(c + 1.0) * fast_kv if n == 1 else attention_term(n, c, s_pair, s_kv)
                     for n, c in zip(num_scheduled, num_context, strict=True)]
            seconds += numpy_sum(terms, 0, len(terms))
        return self._with_tail_ms(seconds, num_requests, tokens)

    def decode_steps_ms(self, num_requests: int, context_sums: np.ndarray) -> np.ndarray:
        """Each step of `num_requests` one-token decodes whose contexts sum to context_sums[j]
        (in place on one array: x + c and c + x are the same bits)."""
        k = self.k
        seconds = context_sums.astype(np.float64)
        seconds += num_requests
        seconds *= self.fast_kv
        seconds += self._fixed_s(num_requests, num_requests)
        if k.s_allreduce_fixed:
            seconds += k.s_allreduce_fixed + num_requests * k.s_allreduce_per_token
        seconds += k.s_step + num_requests * k.s_per_request
        seconds *= 1000.0
        return seconds

    def decode_pricer(self, num_requests: int) -> Callable[[int], float]:
        """One step of decode_steps_ms as a Python float, from its contexts' sum: the same
        operations in the same order (so the same bits), for runs too short to pay for numpy
        calls (core/async_fast_forward.py's quiet pairs, cut at the next arrival). Made once
        per batch size (at most max_num_seqs of them)."""
        pricer = self.pricers.get(num_requests)
        if pricer is None:
            pricer = self.pricers[num_requests] = self._decode_pricer(num_requests)
        return pricer

    def _decode_pricer(self, num_requests: int) -> Callable[[int], float]:
        k, n, fast_kv = self.k, num_requests, self.fast_kv
        fixed = self._fixed_s(n, n)
        tail = k.s_step + n * k.s_per_request
        if k.s_allreduce_fixed:
            reduce = k.s_allreduce_fixed + n * k.s_allreduce_per_token
            return lambda context_sum: (fixed + fast_kv * (context_sum + n) + reduce
                                        + tail) * 1000.0
        return lambda context_sum: (fixed + fast_kv * (context_sum + n) + tail) * 1000.0


def attention_term(num_scheduled: int, num_context: int, s_pair: float, s_kv: float) -> float:
    """One request's attention seconds as RooflineStepTime.__call__ computes it in float64."""
    n, c = float(num_scheduled), float(num_context)
    attend, read = (n * c + n * (n + 1.0) * 0.5) * s_pair, (c + n) * s_kv
    return attend if attend >= read else read  # (np.maximum: no NaN here)


# numpy's pairwise summation: 8 accumulators up to this many values, halves past it
# (numpy/_core/src/umath/loops_utils.h.src, PW_BLOCKSIZE)
PAIRWISE_BLOCK = 128


def numpy_sum(values: list[float], lo: int, count: int) -> float:
    """float(np.array(values[lo:lo + count]).sum()) in plain Python, the same bits: numpy sums
    a float64 array pairwise (loops_utils.h.src pairwise_sum), not left to right."""
    if count < 8:
        total = 0.0
        for i in range(lo, lo + count):
            total += values[i]
        return total
    if count <= PAIRWISE_BLOCK:
        acc = values[lo:lo + 8]
        end = lo + count - count % 8
        for i in range(lo + 8, end, 8):
            for j in range(8):
                acc[j] += values[i + j]
        total = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))
        for i in range(end, lo + count):
            total += values[i]
        return total
    half = count // 2
    half -= half % 8
    return numpy_sum(values, lo, half) + numpy_sum(values, lo + half, count - half)


def decode_step_ms(config: EngineConfig, batch_size: int, context: int) -> float:
    """One decode step of batch_size requests that each hold `context` tokens."""
    fn = make_step_time(config)
    return fn(np.ones(batch_size, dtype=np.int64), np.full(batch_size, context, dtype=np.int64))


def frontend_ms(config: EngineConfig) -> float:
    """The API server's time per request (parsing, tokenizing, the first streamed chunk's
    trip), added to TTFT and E2E latency; 0 for a config the cost model does not price."""
    return resolve(config).calibration.frontend_ms
