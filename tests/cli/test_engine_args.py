"""sim's engine config: vLLM argument names beside EngineConfig fields, what is not modelled."""

from __future__ import annotations

import pytest

from servescope.core.config import ConfigError
from servescope.vllm_import.engine_config import load_engine_config


def test_a_calibration_style_config_loads_and_names_what_is_not_modelled() -> None:
    loaded = load_engine_config({
        "model": "meta-llama/Llama-2-7b-hf", "gpu": "H100", "tensor_parallel_size": 1,
        "quantization": None, "max-num-batched-tokens": 2048, "enable_prefix_caching": True,
        "kv_offloading_size": 8, "kv_offloading_backend": "native", "seed": 42,
        "enforce_eager": False, "pipeline_parallel_size": 1})
    assert loaded.config.max_num_batched_tokens == 2048
    assert [s.split("=")[0] for s in loaded.not_modelled] == ["kv_offloading_size",
                                                              "kv_offloading_backend"]
    assert "GPU KV pool" in loaded.not_modelled[0]
    assert set(loaded.ignored) == {"seed", "enforce_eager"}


def test_vllm_batch_defaults_fill_what_a_priced_run_leaves_out() -> None:
    """vLLM's API server on a >= 70 GiB GPU that is not an A100: 8192 tokens, 1024 sequences
    (vllm/engine/arg_utils.py, default_max_num_batched_tokens / default_max_num_seqs)."""
    h100 = load_engine_config({"model": "Qwen/Qwen3-8B", "gpu": "H100"})
    assert (h100.config.max_num_batched_tokens, h100.config.max_num_seqs) == (8192, 1024)
    assert set(h100.defaults) == {"max_num_batched_tokens", "max_num_seqs", "async_scheduling"}
    assert h100.config.async_scheduling  # as vllm serve resolves it on a GPU
    a100 = load_engine_config({"model": "Qwen/Qwen3-8B", "gpu": "A100-80GB"})
    assert (a100.config.max_num_batched_tokens, a100.config.max_num_seqs) == (2048, 256)
    bare = load_engine_config({"block_size": 8})
    assert bare.config.max_num_seqs == 256 and not bare.config.async_scheduling
    assert bare.given == {"block_size": 8}


def test_an_unknown_key_is_named() -> None:
    with pytest.raises(ConfigError) as err:
        load_engine_config({"model": "Qwen/Qwen3-8B", "max_num_sequences": 4})
    assert err.value.field == "max_num_sequences"


def test_data_parallel_size_is_modelled() -> None:
    loaded = load_engine_config({"data_parallel_size": 2})
    assert loaded.config.data_parallel_size == 2 and loaded.not_modelled == []


def test_null_means_the_default_as_in_vllm_json_dumps() -> None:
    loaded = load_engine_config({"max_num_seqs": None, "max_model_len": None, "block_size": 32})
    assert loaded.config.max_num_seqs == 256 and loaded.config.max_model_len is None
    assert loaded.config.block_size == 32
