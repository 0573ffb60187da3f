"""The vLLM V1 policy driven step by step on tiny hand-made cases, as vLLM's own tests do."""

from __future__ import annotations

from support.factories import make_config, make_requests

from servescope.core.engine import Engine
from servescope.core.request import RequestSpec


def _plan(record) -> list[tuple[str, int]]:
    return [(e.id, e.n) for e in record.scheduled]


def test_running_first_then_fcfs_admission_under_one_budget() -> None:
    engine = Engine(make_config(max_num_batched_tokens=20), make_requests((12, 3), (12, 3)))
    first = engine.step()
    assert _plan(first) == [("r0", 12), ("r1", 8)]  # r1's prompt is chunked to the budget
    second = engine.step()
    assert _plan(second) == [("r0", 1), ("r1", 4)]
    assert [e.sampled for e in second.scheduled] == [True, True]


def test_head_of_line_blocking_stops_admission() -> None:
    # r1 cannot get blocks for its whole prompt; r2 would fit but is never tried.
    engine = Engine(make_config(num_gpu_blocks=9, max_num_batched_tokens=64),
                    make_requests((16, 4), (20, 2), (4, 2)))
    record = engine.step()
    assert _plan(record) == [("r0", 16)]
    assert record.waiting == ("r1", "r2")


def test_long_prefill_threshold_is_ignored_for_a_lone_request() -> None:
    lone = Engine(make_config(long_prefill_token_threshold=8), make_requests((30, 2))).step()
    assert _plan(lone) == [("r0", 30)]
    pair = Engine(make_config(long_prefill_token_threshold=8), make_requests((30, 2), (9, 2)))
    assert _plan(pair.step()) == [("r0", 8), ("r1", 8)]


def test_without_chunking_a_prompt_over_the_budget_stops_admission() -> None:
    engine = Engine(make_config(enable_chunked_prefill=False, max_num_batched_tokens=16),
                    make_requests((10, 3), (10, 3)))
    assert _plan(engine.step()) == [("r0", 10)]


def test_preemption_takes_the_running_tail_and_blocks_admission() -> None:
    # 7 usable blocks of 4 tokens; two requests grow until one must go.
    engine = Engine(make_config(num_gpu_blocks=8), make_requests((12, 12), (12, 12), (4, 1)))
    records = list(engine.run())
    step = next(r for r in records if r.preempted)
    assert step.preempted == ("r1",)
    assert step.waiting[0] == "r1"
    assert not step.new and not step.resumed
    resumed = next(r for r in records if r.resumed)
    entry = next(e for e in resumed.scheduled if e.id == "r1")
    assert entry.start == 0 and entry.n > 12  # recompute of prompt + generated tokens


def test_freed_blocks_are_reused_tail_block_first() -> None:
    engine = Engine(make_config(), [RequestSpec("a", 8, 1, arrival_step=0),
                                    RequestSpec("b", 8, 1, arrival_step=1)])
    first = engine.step()
    assert first.new_blocks == {"a": (1, 2)} and first.finished == ("a",)
    assert engine.step().new_blocks == {"b": (2, 1)}


def test_prefix_hit_never_covers_the_last_prompt_token() -> None:
    sys_prompt = (("sys", 8),)
    engine = Engine(make_config(enable_prefix_caching=True),
                    [RequestSpec("a", 8, 3, arrival_step=0, prefix=sys_prompt),
                     RequestSpec("b", 8, 3, arrival_step=1, prefix=sys_prompt),
                     RequestSpec("c", 12, 3, arrival_step=1, prefix=sys_prompt)])
    engine.step()
    second = engine.step()
    assert second.num_cached_tokens == {"b": 4, "c": 8}
    tables = second.new_blocks
    assert tables["b"][0] == tables["c"][0] == 1 and tables["c"][1] == 2
    assert tables["b"][1] != 2  # b recomputes its last block into a new copy


def test_rejects_requests_that_can_never_run() -> None:
    engine = Engine(make_config(num_gpu_blocks=4, max_model_len=64),
                    make_requests((10, 2), (60, 10), (20, 2)))
    records = list(engine.run())
    reasons = dict(records[0].rejected)
    assert "max_model_len" in reasons["r1"] and "KV blocks" in reasons["r2"]
    assert [f for r in records for f in r.finished] == ["r0"]
