"""The lesson's exercises run, small enough for a 2-core machine, and show what they claim."""

from __future__ import annotations

import pytest

from servescope.scenarios import exercises as ex


@pytest.fixture(scope="module")
def small_lesson():
    return ex.lesson_workload(num_requests=24, rate_per_s=40.0, seed=1)


def test_continuous_batching_beats_static_under_one_cost_model(small_lesson):
    result = ex.static_vs_continuous(small_lesson)
    rows = {r["mode"]: r for r in result["rows"]}
    assert set(rows) == {"naive", "static", "continuous", "continuous+chunked"}
    assert rows["continuous+chunked"]["output_throughput"] > rows["static"]["output_throughput"]
    assert rows["static"]["output_throughput"] > rows["naive"]["output_throughput"]
    assert rows["continuous"]["mean_ttft_ms"] < rows["static"]["mean_ttft_ms"]
    assert rows["naive"]["max_running"] == 1 and rows["static"]["max_running"] <= 16
    assert "placeholder" in result["pricing"] or "cost model" in result["pricing"]


def test_budget_sweep_trades_ttft_against_itl_and_saturates(small_lesson):
    budgets = (256, 1024, 4096, 16384)
    result = ex.budget_sweep(budgets, small_lesson)
    rows = result["rows"]
    assert [r["max_num_batched_tokens"] for r in rows] == list(budgets)
    # A bigger budget finishes prompts sooner (TTFT down) but puts more prefill into the
    # steps decoders wait on (ITL tail up).
    assert rows[-1]["mean_ttft_ms"] < rows[0]["mean_ttft_ms"]
    assert rows[-1]["p99_itl_ms"] > rows[0]["p99_itl_ms"]
    best = max(r["output_throughput"] for r in rows)
    sat = result["saturation_budget"]
    assert sat in budgets
    below = [r for r in rows if r["max_num_batched_tokens"] < sat]
    assert all(r["output_throughput"] < 0.95 * best for r in below)


def test_fragmentation_by_the_allocators():
    specs = ex.fragmentation_workload(num_requests=80, seed=2)
    lengths = [s.prompt_len + s.output_len for s in specs]
    result = ex.fragmentation(specs, memory_tokens=8 * 8192)
    rows = {r["allocator"]: r for r in result["rows"]}
    contiguous, paged = rows["max"], rows["paged"]
    # A request holds at most its final length in an 8192-token reservation.
    assert contiguous["kv_token_states_share"] < max(lengths) / 8192
    assert paged["kv_token_states_share"] > 0.9
    # Paged waste is under one block per running request: < 16 / shortest request.
    assert paged["kv_internal_fragmentation_share"] < 16 / min(lengths)
    assert contiguous["max_running"] == 8  # 8 reservations of 8192 fill the memory
    assert paged["max_running"] > 2 * contiguous["max_running"]
    assert paged["output_throughput"] > contiguous["output_throughput"]


def test_fragmentation_workload_has_the_lesson_statistics():
    specs = ex.fragmentation_workload()
    outputs = [s.output_len for s in specs]
    assert len(specs) == 1000
    mean = sum(outputs) / len(outputs)
    sd = (sum((o - mean) ** 2 for o in outputs) / len(outputs)) ** 0.5
    assert abs(mean - 1500) < 60 and abs(sd - 600) < 60
