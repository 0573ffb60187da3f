"""vllm:prompt_tokens_by_source and vllm:prompt_tokens_cached as vLLM 0.33 counts them when a
request's prefill ends (vllm/v1/metrics/stats.py PromptTokenStats.update_from_output, read by
loggers.py PrometheusStatLogger.record): hand-made requests, one per rule."""

from __future__ import annotations

from servescope.observability.meter import COUNTERS, count_prompt_sources

SOURCES = ("prompt_tokens_local_compute", "prompt_tokens_local_cache_hit",
           "prompt_tokens_external_kv_transfer", "prompt_tokens_cached")


def counted(prompt_len: int, num_cached: int, num_external: int) -> tuple[float, ...]:
    delta = dict.fromkeys(COUNTERS, 0.0)
    count_prompt_sources(delta, prompt_len, num_cached, num_external)
    return tuple(delta[name] for name in SOURCES)


def test_a_remote_prefilled_request_counts_its_loaded_tokens_as_external():
    # a decode replica: 64-token prompt, 16 tokens hit its own prefix cache, 48 loaded; after
    # the load vLLM sets num_computed_tokens to 63 (_update_waiting_for_remote_kv), so its
    # num_cached_tokens is 63 and the last token is recomputed
    assert counted(64, 63, 48) == (1, 16, 48, 63)
    # nothing cached locally: every prompt token came over the link
    assert counted(64, 63, 64) == (1, 0, 64, 63)


def test_a_local_request_counts_its_prefix_hit_as_local():
    assert counted(64, 32, 0) == (32, 32, 0, 32)
    assert counted(64, 0, 0) == (64, 0, 0, 0)
    # all but the last token cached: vLLM counts the recomputed token as a hit as well
    assert counted(64, 63, 0) == (1, 64, 0, 63)
