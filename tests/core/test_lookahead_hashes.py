"""Lookahead block hashes on hand-made cases: with an EAGLE-family drafter and prefix caching,
vLLM 0.33 hashes each full block with the token(s) after it (vllm/v1/core/kv_cache_utils.py
get_request_block_hasher, L = VllmConfig.num_hash_lookahead_tokens), so a block is cached only
once those tokens exist and shared only when they are shared too."""

from __future__ import annotations

import pytest

from servescope.capture.prefix import prefix_segments
from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.request import RequestSpec
from servescope.core.scheduler.spec_decode import num_hash_lookahead_tokens
from servescope.core.speculative import parse_speculative_config

EAGLE3 = {"method": "eagle3", "num_speculative_tokens": 3}
NGRAM = {"method": "ngram", "num_speculative_tokens": 3}
MTP3 = {"method": "mtp", "num_speculative_tokens": 3, "num_nextn_predict_layers": 3}


def _run(spec: dict, specs: list[RequestSpec]) -> list[dict]:
    data = {"num_gpu_blocks": 64, "block_size": 4, "max_num_batched_tokens": 64,
            "enable_prefix_caching": True, "speculative_config": spec}
    return [r.to_dict() for r in Engine(EngineConfig.from_dict(data), specs).run()]


@pytest.mark.parametrize(("given", "caching", "expected"), [
    (EAGLE3, True, 1), ({"method": "eagle", "num_speculative_tokens": 2}, True, 1),
    ({"method": "mtp", "num_speculative_tokens": 3}, True, 1),  # one MTP module
    (MTP3, True, 3),  # use_multi_module_mtp: num_prefill_lookahead_tokens = K
    ({**MTP3, "num_speculative_tokens": 1}, True, 1),  # min(layers, K) = 1: one module
    (NGRAM, True, 0), ({"method": "dflash", "num_speculative_tokens": 3}, True, 0),
    (EAGLE3, False, 0)])
def test_which_drafters_hash_ahead(given: dict, caching: bool, expected: int) -> None:
    # VllmConfig.num_hash_lookahead_tokens: needs_eagle_block_drop (eagle, eagle3, mtp; not
    # dflash/dspark) and prefix caching, then num_prefill_lookahead_tokens
    assert num_hash_lookahead_tokens(parse_speculative_config(given), caching) == expected


def test_a_block_is_cached_once_the_token_after_it_exists() -> None:
    # 8-token prompt in 4-token blocks: block 1 ends at the prompt's end, so its hash needs
    # the first output token; cached by update_from_output's cache_blocks, not at schedule
    one = [RequestSpec("a", 8, 4, arrival_step=0)]
    stored = {name: [e["block_ids"] for e in _run(spec, one)[0]["kv_events"]
                     if e["type"] == "BlockStored"] for name, spec in
              (("eagle3", EAGLE3), ("ngram", NGRAM))}
    assert stored["ngram"] == [[1, 2]]  # (block 0 is the null block)
    assert stored["eagle3"] == [[1], [2]]


@pytest.mark.parametrize(("spec", "shared", "expected_hit"), [
    (NGRAM, 8, 8), (EAGLE3, 8, 4), (EAGLE3, 9, 8), (MTP3, 10, 4), (MTP3, 11, 8)])
def test_a_block_is_shared_only_with_its_lookahead_tokens(spec: dict, shared: int,
                                                          expected_hit: int) -> None:
    # b's prompt shares `shared` tokens with a's: block 1 (tokens 4..7) is a hit only when
    # tokens 8 .. 8 + L - 1 are shared too (L = 0 ngram, 1 eagle3, 3 multi-module MTP)
    prefix = (("sys", shared),)
    specs = [RequestSpec("a", 14, 8, arrival_step=0, prefix=prefix),
             RequestSpec("b", 14, 4, arrival_step=6, prefix=prefix)]
    rows = _run(spec, specs)
    hit = next(r["num_cached_tokens"]["b"] for r in rows if "b" in r["new"])
    assert hit == expected_hit


def test_recovered_segments_reach_past_the_shared_blocks() -> None:
    # two shared blocks under L = 1 prove 2 * 4 + 1 shared tokens; a later boundary (where
    # the sharers change) sits one token past its block boundary too
    hashes = {"a": [b"x", b"y", b"z"], "b": [b"x", b"y", b"z"], "c": [b"x", b"w"]}
    plain = prefix_segments(hashes, 4)
    ahead = prefix_segments(hashes, 4, 1)
    assert [n for _, n in plain["a"]] == [4, 8] and [n for _, n in plain["c"]] == [4]
    assert [n for _, n in ahead["a"]] == [5, 8] and [n for _, n in ahead["c"]] == [5]
