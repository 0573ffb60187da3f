"""vLLM's --speculative-config parsed as vllm/config/speculative.py SpeculativeConfig.__post_init__
settles it; bad values name the key."""

from __future__ import annotations

import json

import pytest

from servescope.core.config import ConfigError, EngineConfig
from servescope.core.speculative import SpeculativeConfig, parse_speculative_config


def test_eagle3_as_vllm_takes_it_and_its_json_text():
    given = {"method": "eagle3", "num_speculative_tokens": 3, "model": "yuhuili/EAGLE3-x"}
    parsed = parse_speculative_config(given)
    assert parsed == SpeculativeConfig("eagle3", 3, model="yuhuili/EAGLE3-x")
    assert parse_speculative_config(json.dumps(given)) == parsed
    assert parse_speculative_config(None) is None


def test_shorthands_resolve_as_post_init_does():
    # __post_init__: model "[ngram]" with no method is ngram; method "[ngram]" is "ngram";
    # an MTP model type is deprecated to "mtp"; any other model alone is a draft model
    assert parse_speculative_config({"model": "[ngram]", "num_speculative_tokens": 2}).method \
        == "ngram"
    assert parse_speculative_config({"method": "[ngram]", "num_speculative_tokens": 2}).method \
        == "ngram"
    assert parse_speculative_config({"method": "deepseek_mtp", "num_speculative_tokens": 1})\
        .method == "mtp"
    assert parse_speculative_config({"model": "org/tiny", "num_speculative_tokens": 4})\
        .method == "draft_model"


def test_ngram_lookup_window_defaults():
    # __post_init__: neither given -> 5 and 5; one given -> the other equals it
    both = parse_speculative_config({"method": "ngram", "num_speculative_tokens": 2})
    assert (both.prompt_lookup_min, both.prompt_lookup_max) == (5, 5)
    one = parse_speculative_config({"method": "ngram", "num_speculative_tokens": 2,
                                    "prompt_lookup_max": 3})
    assert (one.prompt_lookup_min, one.prompt_lookup_max) == (3, 3)


def test_unknown_vllm_keys_kept_in_the_json_but_ignored():
    given = {"method": "ngram", "num_speculative_tokens": 2, "disable_padded_drafter_batch": True}
    config = EngineConfig.from_dict({"speculative_config": given})
    assert config.speculative.num_speculative_tokens == 2
    assert config.to_dict()["speculative_config"] == given
    assert EngineConfig.from_dict(config.to_dict()) == config


@pytest.mark.parametrize(("given", "field"), [
    ({"method": "eagle3"}, "speculative_config.num_speculative_tokens"),
    ({"method": "eagle3", "num_speculative_tokens": 0},
     "speculative_config.num_speculative_tokens"),
    ({"method": "eagle3", "num_speculative_tokens": "3"},
     "speculative_config.num_speculative_tokens"),
    ({"method": "lookahead", "num_speculative_tokens": 3}, "speculative_config.method"),
    ({"num_speculative_tokens": 3}, "speculative_config.method"),
    ({"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_min": 4,
      "prompt_lookup_max": 2}, "speculative_config.prompt_lookup_min"),
    ({"method": "eagle", "num_speculative_tokens": 2,
      "num_speculative_tokens_per_batch_size": [[4, 1, 2]]},
     "speculative_config.num_speculative_tokens_per_batch_size"),
    ({"method": "eagle", "num_speculative_tokens": 2, "acceptance_rates": [0.5, 0.4, 0.3]},
     "speculative_config.acceptance_rates"),
    ({"method": "eagle", "num_speculative_tokens": 2, "acceptance_rates": [1.5]},
     "speculative_config.acceptance_rates"),
    ("{not json", "speculative_config"),
    ([1, 2], "speculative_config"),
])
def test_bad_values_name_the_field(given, field):
    with pytest.raises(ConfigError) as err:
        EngineConfig.from_dict({"speculative_config": given})
    assert err.value.field == field


def test_only_vllm_v1_speculates():
    with pytest.raises(ConfigError) as err:
        EngineConfig.from_dict({"policy": "static", "speculative_config": {
            "method": "ngram", "num_speculative_tokens": 2}})
    assert err.value.field == "speculative_config"
