"""Invariants after every step with drafts (budget, blocks, computed <= total, drafts <= K) on
generated speculative workloads, sync and async; and the run_to_end summary path agrees."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.factories import run_checked

from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.request import RequestSpec

row_st = st.tuples(st.integers(1, 60), st.integers(1, 30), st.integers(0, 12),
                   st.sampled_from([(), (("sys", 16),)]),
                   st.none() | st.lists(st.integers(0, 6), max_size=12))

config_st = st.fixed_dictionaries({
    "block_size": st.sampled_from([2, 4, 8]),
    "num_gpu_blocks": st.integers(24, 80),
    "max_num_seqs": st.integers(1, 6),
    "max_num_batched_tokens": st.integers(8, 64),
    "long_prefill_token_threshold": st.sampled_from([0, 7]),
    "enable_prefix_caching": st.booleans(),
    "scheduling_policy": st.sampled_from(["fcfs", "priority"]),
    "async_scheduling": st.booleans(),
    "speculative_config": st.fixed_dictionaries({
        "method": st.sampled_from(["ngram", "eagle3", "draft_model"]),
        "num_speculative_tokens": st.integers(1, 5),
        "model": st.just("org/draft")}),
})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config_st, st.lists(row_st, min_size=1, max_size=6))
def test_invariants_hold_with_drafts(data, rows) -> None:
    config = EngineConfig.from_dict(data)
    specs = [RequestSpec(f"r{i}", p, o, arrival_step=a, prefix=pre, priority=i % 2,
                         spec_accepted=None if acc is None else tuple(acc))
             for i, (p, o, a, pre, acc) in enumerate(rows)]
    # invariants after every step, the records folding into the engine's block tables (under
    # async scheduling a step already planned for a request that its in-flight verify finishes
    # appends blocks before the release, as vLLM does)
    records = run_checked(config, specs, max_steps=5_000)
    k = config.speculative.num_speculative_tokens
    for record in records:
        assert all(0 <= d <= k for d in (record.drafts or {}).values())
    # the summary path (no records) finishes the same requests
    summary_engine = Engine(config, specs, records=False)
    summary_engine.run_to_end()
    assert sorted(r.id for r in summary_engine.done_requests) == sorted(
        rid for record in records for rid in record.finished)
