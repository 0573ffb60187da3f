"""Catalogs: geometry against published parameter counts, names users type, KV sizing."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from servescope.core import catalog, cost_model
from servescope.core.config import ConfigError, EngineConfig
from servescope.core.model_spec import from_hf_config

ROWS = json.loads(resources.files("servescope").joinpath("data", "models.json").read_text())[
    "models"]

KIB = 1024
GB = 1e9
GIB = 1 << 30


@pytest.mark.parametrize("model_id", sorted(catalog.MODELS))
def test_geometry_gives_the_published_parameter_count(model_id: str) -> None:
    spec = catalog.MODELS[model_id]
    tolerance = 0.02 if ROWS[model_id].get("num_parameters_rounded") else 0.01
    assert spec.geometry_params() == pytest.approx(spec.num_parameters, rel=tolerance)


def test_mixtral_active_parameters_match_the_paper() -> None:
    spec = catalog.model("mistralai/Mixtral-8x7B-Instruct-v0.1")
    assert spec.is_moe
    assert spec.geometry_params(active=True) == pytest.approx(12.9e9, rel=0.01)


@pytest.mark.parametrize(("model_id", "active"), [
    ("mistralai/Mixtral-8x22B-Instruct-v0.1", 39e9), ("deepseek-ai/DeepSeek-V3", 37e9),
    ("Qwen/Qwen3-235B-A22B", 22e9), ("Qwen/Qwen3-30B-A3B", 3.3e9),
    ("meta-llama/Llama-4-Maverick-17B-128E-Instruct", 17e9)])
def test_moe_active_parameters_match_the_model_cards(model_id: str, active: float) -> None:
    assert catalog.model(model_id).geometry_params(active=True) == pytest.approx(active, rel=0.03)


@pytest.mark.parametrize("name", [
    "meta-llama/Llama-2-7b-hf", "meta-llama/Llama-2-13b-hf", "meta-llama/Llama-2-70b-hf",
    "codellama/CodeLlama-34b-Instruct-hf", "mistralai/Mistral-Nemo-Instruct-2407",
    "mistralai/Mixtral-8x22B-Instruct-v0.1", "Qwen/Qwen2.5-14B-Instruct",
    "Qwen/Qwen2.5-32B-Instruct",
    "Qwen/Qwen3-8B", "Qwen/Qwen3-14B", "Qwen/Qwen3-32B", "Qwen/Qwen3-30B-A3B-Instruct-2507",
    "Qwen/Qwen3-235B-A22B", "google/gemma-2-9b-it", "google/gemma-3-27b-it",
    "deepseek-ai/DeepSeek-R1", "meta-llama/Llama-4-Scout-17B-16E-Instruct",
    "meta-llama/Llama-4-Maverick-17B-128E-Instruct", "openai/gpt-oss-120b", "openai/gpt-oss-20b"])
def test_the_popular_models_resolve_by_hugging_face_id(name: str) -> None:
    assert catalog.resolve_model(name)[0] in catalog.MODELS


def test_every_model_in_the_calibration_runs_is_in_the_catalog() -> None:
    names = ("RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic",
             "meta-llama/Llama-3.1-70B-Instruct", "mistralai/Mistral-Nemo-Instruct-2407",
             "Qwen/Qwen2.5-7B-Instruct", "01-ai/Yi-34B", "meta-llama/Llama-2-7b-hf",
             "codellama/CodeLlama-34b-Instruct-hf", "meta-llama/Llama-2-70b-hf",
             "meta-llama/Llama-3.1-8B", "Qwen/Qwen3-32B", "Qwen/Qwen3-30B-A3B-Instruct-2507",
             "nvidia/Kimi-K2.5-NVFP4", "MiniMax-M2.5")
    quantization = {name: catalog.resolve_model(name)[1] for name in names}
    assert quantization["RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic"] == "fp8"
    assert quantization["nvidia/Kimi-K2.5-NVFP4"] == "nvfp4"


def test_mla_caches_one_latent_per_layer_on_every_rank() -> None:
    spec = catalog.model("deepseek-ai/DeepSeek-V3")
    assert spec.kv_bytes_per_token(2) == 61 * (512 + 64) * 2  # 70,272 bytes, as vLLM sizes it
    assert spec.kv_bytes_per_token(2, tensor_parallel_size=8) == spec.kv_bytes_per_token(2)
    hw = cost_model.resolve(EngineConfig(model="deepseek-ai/DeepSeek-V3", gpu="H200",
                                         tensor_parallel_size=8, max_model_len=4096))
    assert hw.weight_bytes == 1  # the checkpoint itself is FP8


def test_gpt_oss_experts_are_read_at_mxfp4_size() -> None:
    hw = cost_model.resolve(EngineConfig(model="openai/gpt-oss-120b", gpu="H100",
                                         max_model_len=4096))
    assert hw.expert_weight_bytes == pytest.approx(4.25 / 8)
    assert cost_model.weight_bytes_per_gpu(hw) / GB == pytest.approx(63, rel=0.05)  # 65 GB repo


def test_nvfp4_needs_fp4_tensor_cores() -> None:
    with pytest.raises(ConfigError) as err:
        cost_model.resolve(EngineConfig(model="nvidia/Kimi-K2.5-NVFP4", gpu="H100",
                                        tensor_parallel_size=8))
    assert err.value.field == "quantization" and "Blackwell" in str(err.value)
    hw = cost_model.resolve(EngineConfig(model="nvidia/Kimi-K2.5-NVFP4", gpu="B200",
                                         tensor_parallel_size=8))
    assert hw.linear_tflops == catalog.gpu("B200").fp4_tflops


def test_a_hugging_face_config_gives_the_same_geometry_as_the_catalog() -> None:
    config = {"architectures": ["Qwen3MoeForCausalLM"], "hidden_size": 2048,
              "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4,
              "head_dim": 128, "intermediate_size": 6144, "moe_intermediate_size": 768,
              "num_experts": 128, "num_experts_per_tok": 8, "vocab_size": 151936,
              "tie_word_embeddings": False, "max_position_embeddings": 262144,
              "torch_dtype": "bfloat16", "hidden_act": "silu"}
    spec = from_hf_config("mine", config)
    known = catalog.model("Qwen/Qwen3-30B-A3B")
    assert spec.geometry_params() == known.geometry_params()
    assert spec.kv_bytes_per_token(2) == known.kv_bytes_per_token(2)


def test_a_hugging_face_config_missing_a_field_names_it() -> None:
    with pytest.raises(ConfigError) as err:
        from_hf_config("mine", {"hidden_size": 4096, "num_hidden_layers": 32,
                                "num_attention_heads": 32, "vocab_size": 32000})
    assert err.value.field == "model_config" and "intermediate_size" in str(err.value)


def test_unknown_model_lists_the_known_ones_and_the_model_config_hint() -> None:
    with pytest.raises(ConfigError) as err:
        catalog.model("my-org/secret-13b")
    assert "Qwen/Qwen3-32B" in str(err.value) and "config.json" in str(err.value)


@pytest.mark.parametrize(("model_id", "bf16_kib"), [
    ("meta-llama/Llama-3.1-8B-Instruct", 128), ("meta-llama/Llama-3.3-70B-Instruct", 320)])
def test_kv_bytes_per_token_as_in_the_reference(model_id: str, bf16_kib: int) -> None:
    spec = catalog.model(model_id)
    assert spec.kv_bytes_per_token(2) == bf16_kib * KIB
    assert spec.kv_bytes_per_token(1) == bf16_kib // 2 * KIB
    assert spec.kv_bytes_per_token(2, tensor_parallel_size=2) == bf16_kib // 2 * KIB


def test_70b_kv_for_8k_tokens_is_2_5_gib_bf16() -> None:
    spec = catalog.model("meta-llama/Llama-3.3-70B-Instruct")
    assert 8192 * spec.kv_bytes_per_token(2) / GIB == pytest.approx(2.5)


@pytest.mark.parametrize(("name", "key"), [
    ("H100", "H100"), ("NVIDIA H100 80GB HBM3", "H100"), ("nvidia h200", "H200"),
    ("NVIDIA A100-SXM4-80GB", "A100-80GB"), ("NVIDIA A100-SXM4-40GB", "A100-40GB"),
    ("NVIDIA L40S", "L40S"), ("NVIDIA B200", "B200"), ("AMD Instinct MI300X", "MI300X"),
    ("NVIDIA GeForce RTX 4090", "RTX4090"), ("NVIDIA L4", "L4"),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTXPRO6000"), ("RTX PRO 6000", "RTXPRO6000")])
def test_gpu_names_include_what_nvidia_smi_prints(name: str, key: str) -> None:
    assert catalog.gpu(name).key == key


def test_unknown_names_raise_config_errors_naming_the_field() -> None:
    with pytest.raises(ConfigError) as err:
        catalog.gpu("TPU v5e")
    assert err.value.field == "gpu"
    with pytest.raises(ConfigError) as err:
        catalog.model("gpt2")
    assert err.value.field == "model"


def test_fp8_checkpoint_names_imply_fp8_weights() -> None:
    model_id, own = catalog.resolve_model("neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8")
    assert (model_id, own) == ("meta-llama/Llama-3.3-70B-Instruct", "fp8")
    hw = cost_model.resolve(EngineConfig(model="neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8",
                                         gpu="H100"))
    assert hw.weight_bytes == 1


def test_a100_has_no_fp8_tensor_cores() -> None:
    assert not catalog.gpu("A100-80GB").supports_fp8
    assert catalog.gpu("H100").supports_fp8


def test_every_gpu_has_a_calibration() -> None:
    assert set(catalog.CALIBRATIONS) == set(catalog.GPUS)


def _config(**kw: object) -> EngineConfig:
    base: dict[str, object] = {"model": "meta-llama/Llama-3.3-70B-Instruct", "gpu": "H100",
                               "quantization": "fp8", "max_model_len": 2048}
    base.update(kw)
    return EngineConfig(**base)  # type: ignore[arg-type]


def test_70b_fp8_weights_are_about_72_7_gb() -> None:
    hw = cost_model.resolve(_config())
    assert cost_model.weight_bytes_per_gpu(hw) / GB == pytest.approx(72.7, rel=0.01)


def test_70b_fp8_on_one_h100_leaves_a_few_thousand_tokens() -> None:
    b = cost_model.memory_breakdown(_config())
    assert 1_000 < b["kv_capacity_tokens"] < 20_000


def test_70b_fp8_on_one_h200_leaves_about_60_gb() -> None:
    b = cost_model.memory_breakdown(_config(gpu="H200"))
    assert 55 < b["kv_cache_gib"] * GIB / GB < 65


def test_8b_on_h100_kv_memory_is_close_to_what_vllm_logs() -> None:
    # vLLM PR #10511: 71.29 GiB budget, 14.96 GiB weights, 53.29 GiB left for KV (V0 era reserve)
    b = cost_model.memory_breakdown(EngineConfig(model="meta-llama/Llama-3.1-8B-Instruct",
                                                 gpu="H100", max_num_batched_tokens=8192))
    assert b["weights_gib"] == pytest.approx(14.96, abs=0.05)
    assert b["kv_cache_gib"] == pytest.approx(53.29, rel=0.05)


def test_blocks_are_whole_blocks_of_the_kv_memory() -> None:
    config = _config(gpu="H200", block_size=16)
    b = cost_model.memory_breakdown(config)
    kv_bytes = b["kv_cache_gib"] * GIB
    blocks = cost_model.num_gpu_blocks(config)
    assert blocks * b["block_bytes"] <= kv_bytes < (blocks + 1) * b["block_bytes"]
    assert b["block_bytes"] == 16 * 320 * KIB


def test_more_memory_utilization_or_fp8_kv_gives_more_blocks() -> None:
    base = cost_model.num_gpu_blocks(_config(gpu="H200"))
    assert cost_model.num_gpu_blocks(_config(gpu="H200", gpu_memory_utilization=0.95)) > base
    fp8_kv = cost_model.num_gpu_blocks(_config(gpu="H200", kv_cache_dtype="fp8"))
    assert fp8_kv == pytest.approx(2 * base, rel=0.001)


def test_70b_bf16_on_one_h100_is_refused_with_the_numbers() -> None:
    with pytest.raises(ConfigError) as err:
        cost_model.num_gpu_blocks(_config(quantization=None))
    message = str(err.value)
    assert err.value.field == "model"
    assert "131.4 GiB" in message and "71.3 GiB" in message


def test_a_max_model_len_whose_kv_does_not_fit_is_refused() -> None:
    with pytest.raises(ConfigError) as err:
        cost_model.num_gpu_blocks(_config(max_model_len=None))  # 131072 tokens = 40 GiB of KV
    assert err.value.field == "max_model_len"


def test_tensor_parallel_splits_weights_and_kv_heads() -> None:
    one = cost_model.memory_breakdown(_config(quantization=None, gpu="H200"))
    two = cost_model.memory_breakdown(_config(quantization=None, tensor_parallel_size=2))
    assert two["weights_gib"] == pytest.approx(one["weights_gib"] / 2)
    assert two["kv_bytes_per_token"] == one["kv_bytes_per_token"] // 2


def test_tensor_parallel_must_divide_heads() -> None:
    with pytest.raises(ConfigError) as err:
        cost_model.resolve(_config(tensor_parallel_size=3))
    assert err.value.field == "tensor_parallel_size"


def test_a_model_that_does_not_fit_is_refused_with_each_part_of_the_budget() -> None:
    config = EngineConfig(model="meta-llama/Llama-3.3-70B-Instruct", gpu="H100")
    b = cost_model.memory_breakdown(config)
    with pytest.raises(ConfigError) as err:
        cost_model.num_gpu_blocks(config)
    message = str(err.value)
    assert err.value.field == "model" and "does not fit" in message
    for part in (f"{b['weights_gib']:.1f} GiB", f"activations {b['activation_gib']:.2f} GiB",
                 f"non-torch memory {b['non_torch_gib']:.2f} GiB",
                 f"{b['budget_gib']:.1f} GiB (0.9 x 79.22 GiB)"):
        assert part in message, part


@pytest.mark.parametrize("field", ["num_attention_heads", "num_hidden_layers", "hidden_size",
                                   "num_key_value_heads"])
def test_a_hugging_face_config_with_none_of_a_count_names_it(field: str) -> None:
    config = {"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
              "intermediate_size": 11008, "vocab_size": 32000, field: 0}
    with pytest.raises(ConfigError) as err:
        from_hf_config("mine", config)
    assert err.value.field == "model_config" and field in str(err.value)
