"""Engine configs out of range are refused with the key's name."""

from __future__ import annotations

import pytest

from servescope.core.config import ConfigError, EngineConfig


@pytest.mark.parametrize(("data", "field"), [
    ({"block_size": 12}, "block_size"),
    ({"block_size": 0}, "block_size"),
    ({"max_num_batched_tokens": 0}, "max_num_batched_tokens"),
    ({"num_gpu_blocks": 1}, "num_gpu_blocks"),
    ({"max_num_seqs": -3}, "max_num_seqs"),
    ({"enable_prefix_caching": "yes"}, "enable_prefix_caching"),
    ({"gpu_memory_utilization": 1.5}, "gpu_memory_utilization"),
    ({"policy": "round-robin"}, "policy"),
    ({"num_blocks": 100}, "num_blocks"),
    ({"dtype": "fp8"}, "dtype"),  # refused with or without a model and GPU to price it
    ({"kv_cache_dtype": "int4"}, "kv_cache_dtype"),
    ({"quantization": "awq"}, "quantization"),
])
def test_bad_values_name_their_field(data: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError) as err:
        EngineConfig.from_dict(data)
    assert err.value.field == field
    assert str(err.value).startswith(field)


def test_defaults_follow_vllm() -> None:
    config = EngineConfig.from_dict({})
    assert (config.block_size, config.gpu_memory_utilization) == (16, 0.9)
    assert config.enable_chunked_prefill and config.enable_prefix_caching


def test_vllm_spellings_of_dtypes_are_accepted() -> None:
    config = EngineConfig.from_dict({"dtype": "BF16", "kv_cache_dtype": "fp8_e4m3",
                                     "quantization": "fp8"})
    assert (config.dtype, config.kv_cache_dtype) == ("BF16", "fp8_e4m3")
