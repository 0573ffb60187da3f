"""Step time: physical floors from datasheets, the shape of the roofline, and speed."""

from __future__ import annotations

import dataclasses
import timeit

import numpy as np
import pytest

from servescope.core import catalog, cost_model
from servescope.core.config import EngineConfig

L8B = "meta-llama/Llama-3.1-8B-Instruct"
L70B = "meta-llama/Llama-3.3-70B-Instruct"
MIXTRAL = "mistralai/Mixtral-8x7B-Instruct-v0.1"


def config(model: str = L8B, gpu: str = "H100", **kw: object) -> EngineConfig:
    return EngineConfig(model=model, gpu=gpu, max_model_len=8192, **kw)  # type: ignore[arg-type]


def step(cfg: EngineConfig, n: list[int], c: list[int]) -> float:
    return cost_model.make_step_time(cfg)(np.array(n), np.array(c))


def decode(cfg: EngineConfig, batch: int, context: int = 0) -> float:
    return cost_model.decode_step_ms(cfg, batch, context)


def test_a_decode_never_beats_reading_the_weights_at_peak_bandwidth() -> None:
    floor_ms = 2 * 8.03e9 / 3.35e12 * 1000  # bf16 weights over the datasheet HBM bandwidth
    assert floor_ms < decode(config(), 1) < 2 * floor_ms


def test_a_prefill_never_beats_the_dense_peak() -> None:
    floor_ms = 2 * 8.03e9 * 8192 / 989.4e12 * 1000
    assert floor_ms < step(config(), [8192], [0]) < 3 * floor_ms


def test_decode_is_bandwidth_bound_until_hundreds_of_tokens() -> None:
    cfg = config()
    calibration = dataclasses.replace(catalog.calibration("H100"), step_overhead_ms=0.0,
                                      per_request_overhead_ms=0.0)
    roofline = cost_model.make_step_time(cfg, calibration)
    ones = np.ones(32, dtype=np.int64)
    assert roofline(ones, 0 * ones) / roofline(ones[:1], 0 * ones[:1]) < 1.3
    big = step(cfg, [4096], [0])
    assert step(cfg, [8192], [0]) / big == pytest.approx(2.0, rel=0.15)


def test_long_contexts_cost_their_kv_reads() -> None:
    cfg = config()
    extra = decode(cfg, 8, 32768) - decode(cfg, 8, 0)
    kv_read_floor_ms = 8 * 32768 * 128 * 1024 / 3.35e12 * 1000
    assert kv_read_floor_ms < extra < 2 * kv_read_floor_ms


def test_fp8_weights_speed_up_decode_and_fp8_kv_halves_kv_reads() -> None:
    bf16 = decode(config(), 1)
    fp8 = decode(config(quantization="fp8"), 1)
    assert 0.45 < fp8 / bf16 < 0.8
    kv = decode(config(), 8, 32768) - decode(config(), 8, 0)
    fp8_kv = config(kv_cache_dtype="fp8")
    kv8 = decode(fp8_kv, 8, 32768) - decode(fp8_kv, 8, 0)
    assert kv8 / kv == pytest.approx(0.5, rel=0.05)


def test_fp8_on_a100_saves_bandwidth_but_not_compute() -> None:
    bf16 = step(config(gpu="A100-80GB"), [8192], [0])
    fp8 = step(config(gpu="A100-80GB", quantization="fp8"), [8192], [0])
    assert fp8 / bf16 > 0.9
    h100 = step(config(quantization="fp8"), [8192], [0]) / step(config(), [8192], [0])
    assert h100 < 0.7


def test_h200_decodes_faster_by_about_its_bandwidth() -> None:
    ratio = decode(config(L70B, "H200", quantization="fp8"), 8) / decode(
        config(L70B, "H100", quantization="fp8"), 8)
    assert 3.35 / 4.8 < ratio < 0.85


def test_tensor_parallel_helps_but_pays_for_all_reduces() -> None:
    one = decode(config(L70B, "H200"), 16)
    two = decode(config(L70B, "H100", tensor_parallel_size=2), 16)
    assert one / 2 * 3.35 / 4.8 < two  # better than linear scaling would be impossible
    assert two < one * 4.8 / 3.35  # yet two H100s beat one H200 at reading 141 GB of weights


def test_moe_decode_reads_only_the_experts_it_routes_to() -> None:
    cfg = config(MIXTRAL, "H200")
    all_experts_ms = 2 * 46.7e9 / 4.8e12 * 1000
    active_ms = 2 * 12.9e9 / 4.8e12 * 1000
    assert active_ms < decode(cfg, 1) < 0.5 * all_experts_ms
    assert decode(cfg, 64) > 0.8 * all_experts_ms


def test_pcie_all_reduces_cost_more_than_nvlink_ones() -> None:
    """Same model, same datasheet rates: only the link differs (L40S: PCIe, no NVLink)."""
    l40s = catalog.gpu("L40S")
    assert l40s.link == "pcie" and catalog.gpu("H100").link == "nvlink"
    pcie = cost_model.resolve(config(L8B, "L40S", tensor_parallel_size=2))
    nvlink = cost_model.resolve(config(L8B, "H100", tensor_parallel_size=2))
    assert pcie.calibration.allreduce_latency_us > nvlink.calibration.allreduce_latency_us
    fixed = cost_model.coefficients(pcie).s_allreduce_fixed
    assert fixed == pytest.approx(2 * 32 * pcie.calibration.allreduce_latency_us * 1e-6)
    assert cost_model.coefficients(cost_model.resolve(config(L8B, "L40S"))).s_allreduce_fixed == 0


def test_moe_weights_read_grow_with_the_experts_a_batch_touches() -> None:
    qwen = "Qwen/Qwen3-30B-A3B-Instruct-2507"
    touched = [cost_model.experts_touched(n, 128, 8) for n in (1, 8, 64, 512)]
    assert touched[0] == pytest.approx(8) and touched[-1] == pytest.approx(128, rel=0.01)
    assert touched == sorted(touched)
    steps = [decode(config(qwen, "H100"), n) for n in (1, 8, 64)]
    assert steps[0] < steps[1] < steps[2]


def test_nvfp4_and_mxfp4_shrink_the_weights_read() -> None:
    oss = cost_model.resolve(config("openai/gpt-oss-20b", "H100"))
    as_bf16 = dataclasses.replace(oss, expert_weight_bytes=2.0)
    assert cost_model.weight_bytes_per_gpu(oss) < 0.4 * cost_model.weight_bytes_per_gpu(as_bf16)


def test_the_api_server_time_is_added_to_ttft_and_e2e_only() -> None:
    from servescope.core.engine import Engine
    from servescope.core.request import RequestSpec
    specs = [RequestSpec("a", 200, 5, arrival_s=0.0)]
    summaries = []
    for frontend in (0.0, 12.5):
        cfg = config(num_gpu_blocks=600, frontend_overhead_ms=frontend)
        engine = Engine(cfg, specs, cost_model.make_step_time(cfg))
        for _ in engine.run():
            pass
        summaries.append(engine.summary())
    plain, served = summaries
    assert served["mean_ttft_ms"] == pytest.approx(plain["mean_ttft_ms"] + 12.5)
    assert served["mean_e2el_ms"] == pytest.approx(plain["mean_e2el_ms"] + 12.5)
    assert served["mean_itl_ms"] == pytest.approx(plain["mean_itl_ms"])


def test_chunked_prefill_costs_about_the_same_attention_in_two_chunks() -> None:
    cfg = config()
    whole = step(cfg, [4096], [0])
    chunks = step(cfg, [2048], [0]) + step(cfg, [2048], [2048])
    assert chunks == pytest.approx(whole, rel=0.1)
    assert chunks > whole  # the second chunk re-reads weights and pays the step overhead


def test_mixed_batches_cost_more_than_either_part() -> None:
    cfg = config()
    mixed = step(cfg, [512] + [1] * 32, [0] + [1000] * 32)
    assert mixed > step(cfg, [512], [0])
    assert mixed > decode(cfg, 32, 1000)


def test_empty_step_is_free_and_results_are_floats() -> None:
    fn = cost_model.make_step_time(config())
    assert fn(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)) == 0.0
    assert isinstance(fn(np.array([3]), np.array([0])), float)


def test_step_time_is_cheap_enough_for_the_hot_loop() -> None:
    fn = cost_model.make_step_time(config())
    n = np.ones(256, dtype=np.int64)
    c = np.full(256, 700, dtype=np.int64)
    n_mixed = n.copy()
    n_mixed[0] = 1024
    per_call = min(timeit.repeat(lambda: (fn(n, c), fn(n_mixed, c)), number=200, repeat=3)) / 400
    assert per_call < 100e-6
