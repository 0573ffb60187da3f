"""The contrast policies the lesson teaches: V0-style, static and naive batching."""

from __future__ import annotations

from support.factories import make_config, run_checked

from servescope.core.config import POLICIES
from servescope.core.engine import Engine
from servescope.core.request import RequestSpec
from servescope.core.scheduler import naive, static, vllm_v0, vllm_v1
from servescope.core.scheduler.base import Scheduler
from servescope.core.scheduler.make import SCHEDULERS


def _specs(*rows: tuple[int, int, int]) -> list[RequestSpec]:
    return [RequestSpec(f"r{i}", p, o, arrival_step=a) for i, (p, o, a) in enumerate(rows)]


def test_v0_admission_is_a_prefill_only_step_that_stalls_decodes() -> None:
    config = make_config(policy="vllm-v0", num_gpu_blocks=64, max_num_batched_tokens=64)
    records = run_checked(config, _specs((8, 6, 0), (30, 3, 2)))
    admit = next(r for r in records if "r1" in r.new)
    assert [(e.id, e.n) for e in admit.scheduled] == [("r1", 30)]  # r0's decode waits
    assert all(not e.prefill for r in records if r is not admit and r.step > 0
               for e in r.scheduled)


def test_v1_mixes_the_same_admission_with_decodes() -> None:
    config = make_config(num_gpu_blocks=64, max_num_batched_tokens=64)
    records = run_checked(config, _specs((8, 6, 0), (30, 3, 2)))
    admit = next(r for r in records if "r1" in r.new)
    assert [(e.id, e.n) for e in admit.scheduled] == [("r0", 1), ("r1", 30)]


def test_static_batches_pad_and_nobody_joins_mid_batch() -> None:
    config = make_config(policy="static", static_batch_size=2, num_gpu_blocks=64)
    records = run_checked(config, _specs((5, 2, 0), (9, 6, 0), (4, 1, 1)))
    first = records[0]
    assert [(e.id, e.n) for e in first.scheduled] == [("r0", 9), ("r1", 9)]  # padded
    assert first.freed_blocks == ()  # forming a batch reserves once, with no trial and undo
    assert first.new_blocks["r0"] == (1, 2, 3, 4)  # KV for padded 9 + 6 tokens
    batch_one = [r for r in records if "r2" not in r.running]
    assert len(batch_one) == 6  # the longest output decides the batch length
    assert all({e.id for e in r.scheduled} == {"r0", "r1"} for r in batch_one)
    r0_done = next(r.iter for r in records if "r0" in r.finished)
    assert r0_done == 1 and not any("r2" in r.scheduled for r in records[:6])


def test_static_window_starts_a_short_batch_when_the_window_closes() -> None:
    config = make_config(policy="static", static_batch_size=4, static_window_s=0.1,
                         num_gpu_blocks=64)
    specs = [RequestSpec("r0", 8, 2, arrival_s=0.0), RequestSpec("r1", 8, 2, arrival_s=0.05),
             RequestSpec("r2", 8, 2, arrival_s=5.0)]
    records = run_checked(config, specs)
    first = records[0]
    assert {e.id for e in first.scheduled} == {"r0", "r1"}
    assert first.time_s == 0.1  # r0's arrival plus the window, not r2's arrival at 5 s
    # Nothing arrives after r2, so its batch does not wait out the window.
    assert next(r for r in records if "r2" in r.new).time_s == 5.0


def test_static_shrinks_a_batch_whose_padded_shape_does_not_fit() -> None:
    # 15 usable blocks of 4 tokens; padded 20 + 10 tokens = 8 blocks each: only one fits.
    config = make_config(policy="static", static_batch_size=3, num_gpu_blocks=16)
    records = run_checked(config, _specs((20, 2, 0), (4, 10, 0), (4, 2, 0)))
    assert [e.id for e in records[0].scheduled] == ["r0"]
    assert records[0].freed_blocks == ()


def test_naive_runs_one_request_at_a_time() -> None:
    records = run_checked(make_config(policy="naive"), _specs((12, 3, 0), (6, 2, 0)))
    assert all(len(r.scheduled) == 1 for r in records)
    assert [(r.scheduled[0].id, r.scheduled[0].n) for r in records] == [
        ("r0", 12), ("r0", 1), ("r0", 1), ("r1", 6), ("r1", 1)]


def test_contiguous_reservations_and_waste_categories() -> None:
    # 10 prompt + 5 output tokens in blocks of 4; each reservation rounded up to a buddy chunk.
    wanted = {"max": 64, "pow2": 10 + 8, "oracle": 15}
    for allocator, tokens in wanted.items():
        config = make_config(allocator=allocator, max_model_len=64, block_size=4,
                             num_gpu_blocks=40)
        engine = Engine(config, _specs((10, 5, 0)))
        record = engine.step()
        assert record is not None
        slots = len(record.new_blocks["r0"]) * 4
        blocks = -(-tokens // 4)
        assert slots // 4 >= blocks and slots // 4 < 2 * blocks  # the next power of two
        assert slots // 4 & (slots // 4 - 1) == 0
        waste = record.kv_waste
        assert waste["token_states"] == 10
        assert waste["reserved"] == 5  # the rest of the real length, 15 tokens
        assert waste["internal_fragmentation"] == slots - 15


def test_contiguous_frees_below_a_live_reservation_are_external_fragmentation() -> None:
    # 64 blocks of 1 token: r0 and r2 take 8-block chunks, r1 a 32-block chunk above them.
    config = make_config(allocator="oracle", block_size=1, num_gpu_blocks=65,
                         max_num_batched_tokens=64)
    engine = Engine(config, _specs((6, 2, 0), (8, 20, 0), (6, 2, 0)))
    records = [engine.step() for _ in range(3)]
    assert records[1].finished == ("r0", "r2")
    assert min(records[0].new_blocks["r1"]) > max(records[0].new_blocks["r2"])
    waste = records[2].kv_waste
    assert waste["internal_fragmentation"] == 32 - 28
    assert waste["external_fragmentation"] == 32  # the merged chunk r0 and r2 left below r1


def test_paged_waste_is_only_the_partial_last_block() -> None:
    engine = Engine(make_config(block_size=4), _specs((10, 3, 0)))
    waste = engine.step().kv_waste
    assert waste == {"token_states": 10, "reserved": 0, "internal_fragmentation": 2,
                     "external_fragmentation": 0}


def test_every_policy_name_has_its_scheduler_and_no_other() -> None:
    """config.POLICIES (what EngineConfig accepts) and make.SCHEDULERS (what builds them) are
    written separately, so that config imports nothing from the schedulers: kept equal here."""
    assert list(SCHEDULERS) == list(POLICIES)
    assert all(cls.policy_name == name for name, cls in SCHEDULERS.items())
    schedulers = {cls for m in (naive, static, vllm_v0, vllm_v1) for cls in vars(m).values()
                  if isinstance(cls, type) and issubclass(cls, Scheduler) and cls.policy_name}
    assert schedulers == set(SCHEDULERS.values())
