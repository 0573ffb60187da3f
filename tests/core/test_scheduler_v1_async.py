"""vLLM 0.33's async scheduling on tiny hand-made cases: step N + 1 is planned before step N's
tokens are known, so a request's blocks outlive its last step by one schedule."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.factories import make_config, make_requests, run_checked

from servescope.core.config import ConfigError, EngineConfig
from servescope.core.engine import Engine
from servescope.core.invariants import check_invariants
from servescope.core.request import RequestSpec
from servescope.core.scheduler import async_decode


def _plan(record) -> list[tuple[str, int]]:
    return [(e.id, e.n) for e in record.scheduled]


def test_a_finished_requests_blocks_are_held_while_the_next_step_is_planned() -> None:
    # 4 usable blocks of 4 tokens. r0 takes 2 and samples its only token in step 0; r1 needs 3.
    specs = make_requests((8, 1), (12, 1))
    sync = run_checked(make_config(num_gpu_blocks=5), specs)
    assert [(r.step, _plan(r)) for r in sync] == [(0, [("r0", 8)]), (1, [("r1", 12)])]
    records = run_checked(make_config(num_gpu_blocks=5, async_scheduling=True), specs)
    # Step 1 is planned while step 0 runs: r0 still holds its blocks and has nothing left to
    # schedule (its last token is in flight), r1 does not fit, so step 1 runs nothing.
    assert [(r.step, _plan(r)) for r in records] == [(0, [("r0", 8)]), (2, [("r1", 12)])]
    assert records[0].finished == ("r0",) and records[0].num_free_blocks == 4
    assert records[1].new == ("r1",)


def test_decodes_are_planned_on_placeholders_and_each_token_is_sampled_once() -> None:
    cfg = make_config(num_gpu_blocks=40, max_num_seqs=4, max_num_batched_tokens=16,
                      async_scheduling=True)
    specs = make_requests((30, 5), (10, 9), (7, 1))
    records = run_checked(cfg, specs)
    assert not any(r.preempted for r in records)
    sampled: dict[str, int] = {}
    for record in records:
        for entry in record.scheduled:
            sampled[entry.id] = sampled.get(entry.id, 0) + entry.sampled
    assert sampled == {"r0": 5, "r1": 9, "r2": 1}
    # A decode is scheduled before the previous step's token exists: its start counts it.
    r1 = [e for r in records for e in r.scheduled if e.id == "r1"]
    assert [e.start for e in r1 if not e.prefill] == list(range(10, 18))


def test_a_request_preempted_with_its_last_token_in_flight_finishes_from_the_queue() -> None:
    # 4 usable blocks of 4 tokens. Step 1 samples r1's last token; planning step 2, r0 needs a
    # third block and preempts the running tail, r1. Step 1's update then delivers r1's token
    # (stale: r1 is no longer running) and r1 finishes without being resumed.
    cfg = make_config(num_gpu_blocks=5, async_scheduling=True)
    records = run_checked(cfg, make_requests((7, 4), (6, 2)))
    assert [_plan(r) for r in records] == [
        [("r0", 7), ("r1", 6)], [("r0", 1), ("r1", 1)], [("r0", 1)], [("r0", 1)]]
    assert records[1].finished == ("r1",)
    assert records[2].preempted == ("r1",) and records[2].waiting == ("r1",)
    assert records[3].waiting == () and records[3].finished == ("r0",)


def test_same_input_gives_byte_identical_async_records() -> None:
    cfg = make_config(num_gpu_blocks=17, max_num_batched_tokens=24, enable_prefix_caching=True,
                      async_scheduling=True)
    specs = make_requests((40, 9), (33, 12), (21, 30), (50, 4))

    def serialized() -> list[dict[str, object]]:
        return [r.to_dict() for r in Engine(cfg, specs).run()]

    first = serialized()
    assert first == serialized()
    assert any(r["preempted"] for r in first)


@pytest.mark.parametrize("policy", ["vllm-v0", "static", "naive"])
def test_only_the_v1_policy_schedules_asynchronously(policy: str) -> None:
    with pytest.raises(ConfigError) as err:
        EngineConfig.from_dict({"policy": policy, "async_scheduling": True})
    assert err.value.field == "async_scheduling"


def _serialized(config: EngineConfig, specs: list[RequestSpec], min_rows: int,
                monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(async_decode, "MIN_ROWS", min_rows)
    engine = Engine(config, specs)
    lines = []
    for record in engine.run():
        check_invariants(engine.scheduler, record)
        lines.append(json.dumps(record.to_dict(), sort_keys=True))
    return "\n".join(lines) + json.dumps(engine.summary(), sort_keys=True)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(config=st.fixed_dictionaries({
    "block_size": st.sampled_from([1, 4, 16]), "num_gpu_blocks": st.integers(8, 400),
    "max_num_seqs": st.integers(4, 48), "max_num_batched_tokens": st.integers(8, 256),
    "long_prefill_token_threshold": st.sampled_from([0, 16]),
    "enable_prefix_caching": st.booleans(), "async_scheduling": st.just(True)}),
    rows=st.lists(st.tuples(st.integers(1, 90), st.integers(1, 60), st.integers(0, 40),
                            st.sampled_from([(), (("sys", 32),), (("sys", 20),)])),
                  min_size=1, max_size=24))
def test_async_vector_and_per_request_paths_agree(config: dict, rows: list,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = EngineConfig.from_dict(config)
    specs = [RequestSpec(f"r{i}", p, o, arrival_step=a, prefix=pre)
             for i, (p, o, a, pre) in enumerate(rows)]
    assert _serialized(cfg, specs, 1, monkeypatch) == _serialized(cfg, specs, 10**9, monkeypatch)


def test_the_async_vector_path_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = []
    for name, fn in (("schedule", "schedule_chunk"), ("update", "update_chunk")):
        original = getattr(async_decode, fn)

        def spy(*args: object, _original=original, _name=name) -> object:
            rows.append(_name)
            return _original(*args)

        monkeypatch.setattr(async_decode, fn, spy)
    cfg = make_config(num_gpu_blocks=200, max_num_batched_tokens=64, async_scheduling=True)
    run_checked(cfg, make_requests(*[(10 + i, 20) for i in range(8)]))
    assert {"schedule", "update"} <= set(rows)


def test_a_request_no_step_can_admit_is_rejected_and_the_run_ends() -> None:
    cfg = make_config(num_gpu_blocks=200, enable_chunked_prefill=False,
                      max_num_batched_tokens=64, async_scheduling=True)
    records = run_checked(cfg, make_requests((20, 3), (100, 2)))
    assert [rid for r in records for rid, _ in r.rejected] == ["r1"]
    assert [rid for r in records for rid in r.finished] == ["r0"]


def test_an_arrival_refused_at_an_empty_plan_is_still_recorded() -> None:
    # r1 arrives while r0's only step runs and the plan for that step is empty; it can never
    # fit (3 blocks of 1 token, 2 usable): a last record carries its refusal.
    cfg = make_config(block_size=1, num_gpu_blocks=3, max_num_seqs=1, async_scheduling=True)
    specs = [RequestSpec("r0", 1, 1, arrival_step=28), RequestSpec("r1", 1, 2, arrival_step=29)]
    records = run_checked(cfg, specs)
    assert [r.finished for r in records] == [("r0",), ()]
    assert [rid for rid, _ in records[-1].rejected] == ["r1"]
