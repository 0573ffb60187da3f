"""Fast-forward (quiet decode stretches as one DecodeStretch) changes no decision and no record."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.factories import checked_fast_forward, serialized

from servescope.core import cost_model
from servescope.core.config import POLICIES, EngineConfig
from servescope.core.decode_stretch import DecodeStretch, periodic
from servescope.core.engine import Engine
from servescope.core.invariants import check_invariants
from servescope.core.request import RequestSpec
from servescope.core.step_time import decode_steps_ms

rows_st = st.lists(st.tuples(st.integers(1, 90), st.integers(1, 80), st.integers(0, 60),
                             st.sampled_from([(), (("sys", 32),), (("sys", 20),)]),
                             st.integers(0, 2)),
                   min_size=1, max_size=20)
config_st = st.fixed_dictionaries({
    "policy": st.sampled_from(POLICIES),
    "scheduling_policy": st.sampled_from(["fcfs", "priority"]),
    "block_size": st.sampled_from([1, 4, 16]),
    "num_gpu_blocks": st.integers(24, 400),
    "max_num_seqs": st.integers(4, 32),
    "max_num_batched_tokens": st.integers(96, 256),
    "enable_prefix_caching": st.booleans(),
    "static_batch_size": st.integers(1, 6),
    "async_scheduling": st.booleans(),
})


def _step_path(config: EngineConfig, specs: list[RequestSpec]) -> tuple[list[str], str]:
    engine = Engine(config, specs, fast_forward=False)
    lines = []
    for record in engine.run():
        check_invariants(engine.scheduler, record)
        lines.append(serialized(record))
    return lines, json.dumps(engine.summary(), sort_keys=True)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=config_st, rows=rows_st, time_clock=st.booleans())
def test_fast_forward_and_the_step_path_agree(config: dict, rows: list, time_clock: bool) -> None:
    if config["policy"] == "static" and config["scheduling_policy"] == "priority":
        config["scheduling_policy"] = "fcfs"
    config["async_scheduling"] &= config["policy"] == "vllm-v1"
    cfg = EngineConfig.from_dict(config)
    specs = [RequestSpec(f"r{i}", p, o, prefix=pre, priority=prio,
                         **({"arrival_s": a * 0.013} if time_clock else {"arrival_step": a}))
             for i, (p, o, a, pre, prio) in enumerate(rows)]
    step_lines, step_summary = _step_path(cfg, specs)
    fast, engine = checked_fast_forward(cfg, specs)
    assert [serialized(r) for r in fast] == step_lines
    assert json.dumps(engine.summary(), sort_keys=True) == step_summary
    unrecorded = Engine(cfg, specs)  # run_to_end builds no records and raises no events
    assert unrecorded.run_to_end() == len(step_lines)
    assert json.dumps(unrecorded.summary(), sort_keys=True) == step_summary
    assert unrecorded.kv.pool.record_events and not unrecorded.kv.pool.events


LLAMA = {"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100",
         "num_gpu_blocks": 1500}  # fewer than the GPU holds: invariants check every block


def _chat(n: int, seed: int) -> list[RequestSpec]:
    rng = np.random.default_rng(seed)
    return [RequestSpec(f"c{i}", int(rng.integers(50, 1500)), int(rng.integers(20, 400)),
                        arrival_s=float(i * rng.uniform(0.02, 0.3))) for i in range(n)]


def test_priced_runs_take_most_steps_and_match_records_and_summary() -> None:
    """The cost model prices a run vectorised; its clock must be the step path's, bit for bit."""
    config = EngineConfig.from_dict({**LLAMA, "max_num_seqs": 24})
    specs = _chat(40, 1)
    step_lines, step_summary = _step_path(config, specs)
    engine = Engine(config, specs)
    runs, steps = 0, 0
    lines = []
    while (item := engine.advance()) is not None:
        records = list(item.records()) if isinstance(item, DecodeStretch) else [item]
        runs += isinstance(item, DecodeStretch)
        steps += len(records) if isinstance(item, DecodeStretch) else 0
        lines += [serialized(r) for r in records]
    assert lines == step_lines
    assert json.dumps(engine.summary(), sort_keys=True) == step_summary
    assert runs > 10 and steps > len(step_lines) / 2


def test_run_to_end_simulates_without_expanding() -> None:
    config = EngineConfig.from_dict(LLAMA)
    specs = _chat(30, 2)
    step_lines, step_summary = _step_path(config, specs)
    engine = Engine(config, specs)
    assert engine.run_to_end() == len(step_lines)
    assert json.dumps(engine.summary(), sort_keys=True) == step_summary


@pytest.mark.parametrize("overrides", [{}, {"tensor_parallel_size": 2},
                                       {"model": "mistralai/Mixtral-8x7B-Instruct-v0.1",
                                        "tensor_parallel_size": 2}])
def test_decode_steps_are_priced_with_the_per_step_bits(overrides: dict) -> None:
    config = EngineConfig.from_dict({**LLAMA, **overrides})
    step_time = cost_model.make_step_time(config)
    start = np.array([5, 900, 31, 4000, 77], np.int64)
    per_step = [step_time(np.ones(5, np.int64), start + j) for j in range(300)]
    assert decode_steps_ms(step_time, start, 300).tolist() == per_step
    price = step_time.decode_pricer(5)  # (the async run-ahead's, pair by pair)
    assert [price(int(start.sum()) + 5 * j) for j in range(300)] == per_step


def test_a_run_stops_before_the_free_blocks_run_out() -> None:
    """4 requests cross a 4-token block boundary together; 6 free blocks cover one crossing."""
    config = EngineConfig.from_dict({"block_size": 4, "num_gpu_blocks": 23,
                                     "enable_prefix_caching": False})
    specs = [RequestSpec(f"r{i}", 4, 12, arrival_step=0) for i in range(4)]
    engine = Engine(config, specs)
    first = engine.advance()  # the prefill step: 4 blocks, 4 x 1 + 2 left after it (22 usable)
    assert not isinstance(first, DecodeStretch) and first is not None
    assert engine.kv.num_free_blocks == 18
    run = engine.advance()
    assert isinstance(run, DecodeStretch)
    taken = [len(r.new_blocks) for r in run.records()]
    assert sum(taken) <= 18 and taken[0] == 4  # every row crosses at its first decode


def test_periodic_lists_boundaries_by_step_then_row() -> None:
    steps, rows = periodic(np.array([2, 0, 2]), 4, 7)
    assert list(zip(steps.tolist(), rows.tolist(), strict=True)) == [
        (0, 1), (2, 0), (2, 2), (4, 1), (6, 0), (6, 2)]


def test_only_vllm_v1_fast_forwards() -> None:
    specs = [RequestSpec(f"r{i}", 8, 40, arrival_step=0) for i in range(4)]
    for policy in POLICIES:
        engine = Engine(EngineConfig.from_dict({"num_gpu_blocks": 64, "policy": policy}), specs)
        items = []
        while (item := engine.advance()) is not None:
            items.append(item)
        assert any(isinstance(i, DecodeStretch) for i in items) == (policy == "vllm-v1")
    engine = Engine(EngineConfig.from_dict({"num_gpu_blocks": 64, "async_scheduling": True}),
                    specs)
    while (item := engine.advance()) is not None:
        assert not isinstance(item, DecodeStretch)  # its batch queue overlaps the steps
