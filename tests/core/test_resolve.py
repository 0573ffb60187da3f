"""core/resolve.py: each of vLLM 0.33's default rules on a hand-made case, the function named
beside it (vllm/engine/arg_utils.py, vllm/config/vllm.py)."""

from __future__ import annotations

import pytest

from servescope.core.config import ConfigError
from servescope.core.resolve import resolve_config

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"  # max_position_embeddings 131072 in the catalog


@pytest.mark.parametrize("gpu, tokens, seqs", [
    ("H100", 8192, 1024), ("H200", 8192, 1024), ("B200", 8192, 1024),  # >= 70 GiB
    ("A100-80GB", 2048, 256),  # >= 70 GiB but an A100 (vLLM PR #17885)
    ("L40S", 2048, 256), (None, 2048, 256),  # < 70 GiB; no device known: memory 0
])
def test_get_batch_defaults_by_device_memory_and_the_a100_exception(gpu, tokens, seqs):
    """EngineArgs.get_batch_defaults, OPENAI_API_SERVER column."""
    config = resolve_config({"model": LLAMA, "gpu": gpu}).config
    assert (config.max_num_batched_tokens, config.max_num_seqs) == (tokens, seqs)


def test_the_llm_class_gets_its_own_token_budget():
    """EngineArgs.get_batch_defaults, LLM_CLASS column: 16384 big, 8192 small; seqs alike."""
    big = resolve_config({"model": LLAMA, "gpu": "H100"}, "llm_class").config
    small = resolve_config({"model": LLAMA, "gpu": "L4"}, "llm_class").config
    assert (big.max_num_batched_tokens, big.max_num_seqs) == (16384, 1024)
    assert (small.max_num_batched_tokens, small.max_num_seqs) == (8192, 256)


def test_given_settings_are_kept_and_only_the_rest_is_filled():
    resolved = resolve_config({"model": LLAMA, "gpu": "H100", "max_num_seqs": 8})
    assert resolved.config.max_num_seqs == 8
    assert resolved.config.max_num_batched_tokens == 8192
    assert set(resolved.defaults) == {"max_num_batched_tokens", "async_scheduling"}


def test_null_for_a_field_that_cannot_be_null_asks_for_the_default():
    config = resolve_config({"model": LLAMA, "gpu": "H100", "max_num_seqs": None}).config
    assert config.max_num_seqs == 1024


def test_a_defaulted_budget_is_at_least_max_model_len_without_chunked_prefill():
    """_set_default_max_num_seqs_and_batched_tokens_args: max(max_model_len, default)."""
    config = resolve_config({"model": LLAMA, "gpu": "H100", "max_model_len": 20000,
                             "enable_chunked_prefill": False}).config
    assert config.max_num_batched_tokens == 20000
    given = resolve_config({"model": LLAMA, "gpu": "H100", "max_model_len": 20000,
                            "enable_chunked_prefill": False, "max_num_batched_tokens": 4096})
    assert given.config.max_num_batched_tokens == 4096  # the rule is for defaults only


def test_a_defaulted_budget_is_at_most_max_num_seqs_times_max_model_len():
    """_set_default_max_num_seqs_and_batched_tokens_args: min(seqs * max_model_len, default)."""
    config = resolve_config({"model": LLAMA, "gpu": "H100", "max_num_seqs": 2,
                             "max_model_len": 1000}).config
    assert config.max_num_batched_tokens == 2000


def test_a_defaulted_max_num_seqs_is_at_most_the_budget():
    """_set_default_max_num_seqs_and_batched_tokens_args: min(seqs, max_num_batched_tokens)."""
    config = resolve_config({"model": LLAMA, "gpu": "H100",
                             "max_num_batched_tokens": 512}).config
    assert config.max_num_seqs == 512


def test_the_models_context_length_bounds_the_budget_when_max_model_len_is_not_given():
    """ModelConfig's max_model_len is the model's max_position_embeddings when not given."""
    config = resolve_config({"model": LLAMA, "gpu": "H100", "max_num_seqs": 1,
                             "model_config": None}).config
    assert config.max_num_batched_tokens == 8192  # 1 * 131072 is above the default
    tiny = {"max_position_embeddings": 1024, "hidden_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 4, "intermediate_size": 128,
            "vocab_size": 1000}
    config = resolve_config({"model_config": tiny, "gpu": "H100", "max_num_seqs": 4}).config
    assert config.max_num_batched_tokens == 4096


def test_async_scheduling_as_vllm_serve_resolves_it():
    """VllmConfig.__post_init__: unset is on (nothing incompatible is modelled); the contrast
    policies are not vLLM's, and a config with no GPU is the scheduler alone."""
    assert resolve_config({"model": LLAMA, "gpu": "H100"}).config.async_scheduling
    assert not resolve_config({"model": LLAMA, "gpu": "H100",
                               "async_scheduling": False}).config.async_scheduling
    assert not resolve_config({"model": LLAMA, "gpu": "H100",
                               "policy": "static"}).config.async_scheduling
    assert not resolve_config({"num_gpu_blocks": 64}).config.async_scheduling


def test_async_scheduling_with_speculation_as_model_runner_v2_resolves_it():
    """VllmConfig.__post_init__ with Model Runner V2 (0.33's default): speculation leaves async
    on, ngram included; suffix runs on the V1 runner (_get_v2_model_runner_unsupported_features),
    whose v1_async_sched_incompat turns it off, and refuses it when asked."""
    def resolved(method: str, **kw: object) -> bool:
        spec = {"method": method, "num_speculative_tokens": 3}
        return resolve_config({"model": LLAMA, "gpu": "H100", "speculative_config": spec,
                               **kw}).config.async_scheduling
    assert resolved("eagle3") and resolved("ngram")
    assert not resolved("suffix")
    with pytest.raises(ConfigError) as err:
        resolved("suffix", async_scheduling=True)
    assert err.value.field == "async_scheduling"


def test_bad_input_names_the_field_before_any_arithmetic():
    with pytest.raises(ConfigError) as err:
        resolve_config({"model": LLAMA, "gpu": "H100", "max_num_seqs": "many"})
    assert err.value.field == "max_num_seqs"
    with pytest.raises(ConfigError) as err:
        resolve_config({"max_num_sequences": 4})
    assert err.value.field == "max_num_sequences"
    with pytest.raises(ConfigError) as err:
        resolve_config({}, "batch")
    assert err.value.field == "usage_context"
