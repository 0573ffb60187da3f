"""Invariants after every step on generated workloads, and byte-identical determinism."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.factories import run_checked

from servescope.core.config import POLICIES, EngineConfig
from servescope.core.engine import Engine
from servescope.core.invariants import InvariantError, check_invariants
from servescope.core.request import RequestSpec

request_st = st.tuples(st.integers(1, 120), st.integers(1, 40), st.integers(0, 30),
                       st.sampled_from([(), (("sys", 24),), (("sys", 40),), (("doc", 9),)]))

config_st = st.fixed_dictionaries({
    "block_size": st.sampled_from([1, 2, 4, 8, 16]),
    "num_gpu_blocks": st.integers(2, 80),
    "max_num_seqs": st.integers(1, 8),
    "max_num_batched_tokens": st.integers(1, 96),
    "enable_chunked_prefill": st.booleans(),
    "long_prefill_token_threshold": st.sampled_from([0, 0, 7, 32]),
    "enable_prefix_caching": st.booleans(),
    "scheduling_policy": st.sampled_from(["fcfs", "priority"]),
    "scheduler_reserve_full_isl": st.booleans(),
    "watermark": st.sampled_from([0.0, 0.0, 0.05]),
    "policy": st.sampled_from(["vllm-v1", *POLICIES]),
    "allocator": st.sampled_from(["paged", "paged", "max", "pow2", "oracle"]),
    "static_batch_size": st.integers(1, 5),
    "max_model_len": st.sampled_from([None, 256]),
    "async_scheduling": st.booleans(),
})


def _specs(rows: list[tuple[int, int, int, tuple[tuple[str, int], ...]]]) -> list[RequestSpec]:
    return [RequestSpec(f"r{i}", p, o, arrival_step=a, prefix=pre, priority=i % 3)
            for i, (p, o, a, pre) in enumerate(rows)]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config_st, st.lists(request_st, min_size=1, max_size=12))
def test_invariants_hold_after_every_step(config: dict[str, object], rows: list) -> None:
    if config["allocator"] != "paged":
        config = {**config, "enable_prefix_caching": False}
    if config["policy"] != "vllm-v1":
        config = {**config, "async_scheduling": False}
    cfg = EngineConfig.from_dict(config)
    if not cfg.enable_chunked_prefill:
        cfg = cfg.replace(max_num_batched_tokens=max(cfg.max_num_batched_tokens, 200))
    specs = _specs(rows)
    records = run_checked(cfg, specs)
    finished = {rid for r in records for rid in r.finished}
    rejected = {rid for r in records for rid, _ in r.rejected}
    assert finished | rejected == {s.id for s in specs}
    assert not finished & rejected
    if records:
        assert records[-1].num_free_blocks == cfg.num_gpu_blocks - 1


def test_output_tokens_are_exactly_output_len() -> None:
    cfg = EngineConfig.from_dict({"block_size": 4, "num_gpu_blocks": 12, "max_num_seqs": 4,
                                  "max_num_batched_tokens": 16, "enable_prefix_caching": False})
    specs = _specs([(30, 5, 0, ()), (10, 9, 0, ()), (7, 1, 2, ())])
    records = run_checked(cfg, specs)
    sampled: dict[str, int] = {}
    for record in records:
        for entry in record.scheduled:
            sampled[entry.id] = sampled.get(entry.id, 0) + entry.sampled
    assert sampled == {"r0": 5, "r1": 9, "r2": 1}


def test_same_input_gives_byte_identical_records() -> None:
    cfg = EngineConfig.from_dict({"block_size": 4, "num_gpu_blocks": 17, "max_num_seqs": 4,
                                  "max_num_batched_tokens": 24, "enable_prefix_caching": True})
    specs = _specs([(40, 9, 0, (("sys", 16),)), (33, 12, 1, (("sys", 16),)),
                    (21, 30, 1, ()), (50, 4, 3, (("sys", 16),))])

    def serialized() -> str:
        return "\n".join(json.dumps(r.to_dict(), sort_keys=True) for r in Engine(cfg, specs).run())

    first = serialized()
    assert first == serialized()
    assert '"preempted": ["' in first  # the case exercises preemption


def test_check_invariants_catches_a_leaked_reference() -> None:
    cfg = EngineConfig.from_dict({"block_size": 4, "num_gpu_blocks": 16,
                                  "enable_prefix_caching": False})
    engine = Engine(cfg, _specs([(10, 5, 0, ())]))
    record = engine.step()
    assert record is not None
    check_invariants(engine.scheduler, record)
    engine.kv.pool.ref_cnt[engine.kv.tables["r0"][0]] += 1
    try:
        check_invariants(engine.scheduler, record)
    except InvariantError as err:
        assert "ref count" in str(err)
    else:
        raise AssertionError("a corrupted ref count went unnoticed")
