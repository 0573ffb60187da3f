"""`vllm serve` import: flag parsing, vLLM 0.33 defaults by GPU memory class, round trip."""

from __future__ import annotations

import json

import pytest

from servescope.core.resolve import batch_defaults
from servescope.vllm_import import feature_matrix
from servescope.vllm_import.args import import_text, to_vllm_serve
from servescope.vllm_import.cmdline import VllmArgsError, parse_command_line

PASTED = """CUDA_VISIBLE_DEVICES=0,1 vllm serve meta-llama/Llama-3.3-70B-Instruct \\
    --tensor-parallel-size 2 --max-model-len 32K --max-num-seqs=64 \\
    --no-enable-prefix-caching --long-prefill-token-threshold 1024 \\
    --gpu-memory-utilization 0.92 --port 8001 --served-model-name llama --frobnicate 3
"""


def test_pasted_line_sets_the_flags_it_names():
    result = import_text(PASTED, gpu="H100")
    config = result.config
    assert config.model == "meta-llama/Llama-3.3-70B-Instruct"
    assert config.tensor_parallel_size == 2
    assert config.max_model_len == 32 * 1024  # uppercase K is binary in vLLM
    assert config.max_num_seqs == 64
    assert config.enable_prefix_caching is False
    assert config.long_prefill_token_threshold == 1024
    assert config.gpu_memory_utilization == 0.92
    assert result.resolved["enable_prefix_caching"]["source"] == "--no-enable-prefix-caching"


def test_unset_flags_take_the_big_gpu_defaults_on_an_h100():
    config = import_text("vllm serve m", gpu="H100").config
    assert (config.max_num_batched_tokens, config.max_num_seqs) == (8192, 1024)
    assert config.block_size == 16 and config.enable_chunked_prefill
    assert config.enable_prefix_caching and config.gpu_memory_utilization == 0.9


@pytest.mark.parametrize("gpu, expected", [
    ("H200", (8192, 1024)), ("A100-80GB", (2048, 256)), ("L4", (2048, 256)), (None, (2048, 256)),
])
def test_defaults_by_memory_class_and_the_a100_exception(gpu, expected):
    tokens, seqs, why = batch_defaults(gpu)
    assert (tokens, seqs) == expected
    assert why


def test_the_llm_class_gets_the_larger_token_budget():
    assert batch_defaults("H100", "llm_class")[0] == 16384
    assert batch_defaults("L4", "llm_class")[0] == 8192
    config = import_text(json.dumps({"model": "m", "max_num_seqs": 8}), gpu="H100").config
    assert config.max_num_batched_tokens == 16384 and config.max_num_seqs == 8


def test_ignored_flags_are_listed_with_their_reason():
    ignored = {i["flag"]: i["reason"] for i in import_text(PASTED, gpu="H100").ignored}
    assert ignored == {"--port": "no_effect", "--served-model-name": "no_effect",
                       "--frobnicate": "unknown"}


def test_round_trip_through_vllm_serve():
    first = import_text(PASTED, gpu="H100").config
    line = to_vllm_serve(first)
    again = import_text(line, gpu="H100")
    assert again.config == first
    assert not [i for i in again.ignored if i["reason"] == "unknown"]


def test_round_trip_of_a_chunking_off_config():
    first = import_text("vllm serve m --no-enable-chunked-prefill --max-model-len 4096",
                        gpu="L4").config
    assert first.enable_chunked_prefill is False
    assert first.max_num_batched_tokens == 4096  # at least max_model_len when chunking is off
    assert import_text(to_vllm_serve(first), gpu="L4").config == first


def test_python_module_launcher_and_equals_form():
    args = parse_command_line("python -m vllm.entrypoints.openai.api_server --model=x "
                              "--max-num-batched-tokens=4k --enforce-eager")
    assert args == {"model": "x", "max_num_batched_tokens": "4k", "enforce_eager": True}
    assert import_text("python -m vllm.entrypoints.openai.api_server --model x "
                       "--max-num-batched-tokens 4k").config.max_num_batched_tokens == 4000


def test_engine_args_json_and_bad_input():
    result = import_text('{"model": "m", "enable_chunked_prefill": false, "max_model_len": 2048}')
    assert result.config.enable_chunked_prefill is False
    with pytest.raises(VllmArgsError):
        import_text("vllm serve m --max-num-seqs lots")
    with pytest.raises(VllmArgsError):
        import_text("{not json")


def test_speculative_decoding_with_lora_is_flagged_with_sources():
    result = import_text("vllm serve m --enable-lora --speculative-config "
                         "'{\"method\": \"ngram\", \"num_speculative_tokens\": 4}'")
    assert {"lora", "speculative_decoding", "chunked_prefill"} <= set(result.features)
    issues = [i for i in result.compatibility if i["kind"] == "compatibility"]
    assert [sorted(i["features"]) for i in issues] == [["lora", "speculative_decoding"]]
    assert all(src.startswith("https://docs.vllm.ai/") for src in issues[0]["sources"])
    not_modelled = {i["features"][0] for i in result.compatibility if i["kind"] == "not_modelled"}
    assert not_modelled == {"lora"}  # speculative decoding is simulated (issue #34)


def test_chunked_prefill_and_speculative_decoding_by_version():
    # The lesson says they are mutually exclusive; the current matrix says compatible.
    assert feature_matrix.pair_status("chunked_prefill", "speculative_decoding") == "compatible"
    assert feature_matrix.pair_status("chunked_prefill", "speculative_decoding",
                                      "0.6.4") == "incompatible"
    assert feature_matrix.check({"chunked_prefill", "speculative_decoding"}, "0.33.0") == []
    old = feature_matrix.check({"chunked_prefill", "speculative_decoding"}, "0.6.4")
    assert [i["kind"] for i in old] == ["compatibility"]


def test_async_scheduling_is_on_by_default_as_in_vllm_serve():
    result = import_text("vllm serve meta-llama/Llama-3.1-8B-Instruct", gpu="H100")
    assert result.config.async_scheduling is True
    assert result.resolved["async_scheduling"]["source"].startswith("default: vLLM 0.33")
    assert "async_scheduling" in result.features
    assert not [i for i in result.compatibility if i["features"] == ["async_scheduling"]]
    assert to_vllm_serve(result.config).endswith("--async-scheduling")
    off = import_text("vllm serve m --no-async-scheduling")
    assert off.config.async_scheduling is False
    assert off.resolved["async_scheduling"]["source"] == "--no-async-scheduling"
    assert "--no-async-scheduling" in to_vllm_serve(off.config)


@pytest.mark.parametrize("line", [
    "vllm serve m -pp 2",
    # 0.33: suffix runs on the V1 model runner; ngram under Model Runner V2 stays async
    "vllm serve m --speculative-config '{\"method\": \"suffix\", \"num_speculative_tokens\": 3}'",
])
def test_vllm_turns_async_scheduling_off_by_default_where_it_cannot_run(line: str) -> None:
    result = import_text(line)
    assert result.config.async_scheduling is False
    assert result.resolved["async_scheduling"]["source"].startswith("default: off with")


def test_pipeline_parallel_size_one_is_not_pipeline_parallelism():
    assert "pipeline_parallel" not in import_text("vllm serve m -pp 1").features
    assert "pipeline_parallel" in import_text("vllm serve m -pp 2").features


def test_the_matrix_file_is_versioned_and_consistent():
    matrix = feature_matrix.load_matrix()
    assert matrix["version"] >= 1 and matrix["vllm_version"]
    for entry in matrix["pairs"]:
        assert set(entry["features"]) <= set(matrix["features"])
        assert entry["documented_in"] and set(entry["documented_in"]) <= set(matrix["sources"])
        assert entry["status"] in ("compatible", "partial", "incompatible")


def test_70b_fp8_on_one_h100_leaves_a_few_thousand_tokens_of_kv():
    line = "vllm serve meta-llama/Llama-3.3-70B-Instruct --quantization fp8 --max-num-seqs 128"
    result = import_text(line, gpu="H100")
    assert result.config.max_model_len == 131072  # from the model's config, as vLLM does
    assert result.memory["kv_capacity_tokens"] < 4096
    assert any(w.startswith("vLLM would not start") for w in result.warnings)
    # 128 requests of 1000 tokens at 320 KiB a token (REFERENCE.md section 4) need 39 GiB.
    assert 128 * 1000 * 320 * 1024 / 2**30 > 30 * result.memory["kv_cache_gib"]


def test_cpu_kv_offload_is_named_not_modelled_and_data_parallel_is_taken() -> None:
    result = import_text("vllm serve meta-llama/Llama-2-7b-hf --max-model-len 4096 "
                         "--kv-offloading-size 8 --kv-offloading-backend native "
                         "--data-parallel-size 2", gpu="H100")
    assert result.config.data_parallel_size == 2
    assert "kv_offload" in result.features
    offload = [c for c in result.compatibility if c["features"] == ["kv_offload"]]
    assert offload and offload[0]["status"] == "not_modelled"
    assert {i["flag"] for i in result.ignored} == {"--kv-offloading-size",
                                                   "--kv-offloading-backend"}


def test_the_speculative_config_is_read_as_vllm_takes_it():
    result = import_text("vllm serve meta-llama/Llama-3.1-8B-Instruct --speculative-config "
                         "'{\"method\": \"eagle3\", \"model\": \"yuhuili/EAGLE3-LLaMA3.1-"
                         "Instruct-8B\", \"num_speculative_tokens\": 3}'", gpu="H100")
    spec = result.config.speculative
    assert spec is not None and (spec.method, spec.num_speculative_tokens) == ("eagle3", 3)
    assert result.resolved["speculative_config"]["source"] == "--speculative-config"
    assert "--speculative-config" in to_vllm_serve(result.config)
    assert import_text(to_vllm_serve(result.config), gpu="H100").config == result.config


def test_async_scheduling_with_speculation_follows_model_runner_v2():
    """vllm/config/vllm.py 0.33: Model Runner V2 runs ngram asynchronously; suffix falls back
    to the V1 runner (_get_v2_model_runner_unsupported_features), which turns async off."""
    ngram = import_text("vllm serve meta-llama/Llama-3.1-8B-Instruct --speculative-config "
                        "'{\"method\": \"ngram\", \"num_speculative_tokens\": 4}'", gpu="H100")
    assert ngram.config.async_scheduling is True
    suffix = import_text("vllm serve meta-llama/Llama-3.1-8B-Instruct --speculative-config "
                         "'{\"method\": \"suffix\", \"num_speculative_tokens\": 4}'",
                         gpu="H100")
    assert suffix.config.async_scheduling is False
    assert "V1 model runner" in suffix.resolved["async_scheduling"]["source"]


def test_a_bad_speculative_config_names_the_flag_or_the_field():
    with pytest.raises(VllmArgsError, match="--speculative-config"):
        import_text("vllm serve m --speculative-config '{not json'")
    with pytest.raises(ValueError, match="speculative_config.num_speculative_tokens"):
        import_text("vllm serve m --speculative-config '{\"method\": \"eagle3\"}'")
