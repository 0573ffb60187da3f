"""Fast-forward under async scheduling (core/async_fast_forward.py): an engine that runs ahead
without records, taking quiet pairs of the batch queue at once, then records from there, gives
the very records (every field: blocks, cache events, queues, times) and the summary of one that
stepped all the way, on both clocks, with prefix caching, small pools and preemptions; and it
takes fewer advances than steps where the batch decodes quietly, finishes included (the pair
whose update finishes a request is taken at once too: finish_pair)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from servescope.core import async_fast_forward
from servescope.core.checkpoint import advance_to
from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.invariants import check_invariants
from servescope.core.request import RequestSpec


def compare(config: dict, specs: list[RequestSpec], cut: float) -> tuple[int, int]:
    """Run ahead unrecorded to `cut` of the run, then record: the records and summary equal a
    stepped engine's. Returns (advances taken, records skipped)."""
    cfg = EngineConfig.from_dict({**config, "async_scheduling": True})
    stepped = Engine(cfg, specs)
    theirs = [r.to_dict() for r in stepped.run()]
    ahead = Engine(cfg, specs)
    goal, advances = int(cut * len(theirs)), 0
    while ahead.iter < goal and ahead.advance_unrecorded(goal - ahead.iter):
        advances += 1
    assert ahead.iter == goal  # cut where asked
    ours = []
    for record in ahead.run():
        check_invariants(ahead.scheduler, record)
        ours.append(record.to_dict())
    assert ours == theirs[goal:]
    assert ahead.summary() == stepped.summary()
    return advances, goal


SPECS = [RequestSpec(f"r{i}", 30 + 17 * (i % 7), 60 + 23 * (i % 5), arrival_s=0.5 * (i // 24),
                     prefix=(("sys", 32),) if i % 3 == 0 else ())
         for i in range(72)]


def test_a_run_ahead_under_async_records_what_stepping_records() -> None:
    config = {"num_gpu_blocks": 1000, "block_size": 16, "max_num_seqs": 80,
              "max_num_batched_tokens": 512, "enable_prefix_caching": True}
    advances, skipped = compare(config, SPECS, 0.8)
    assert advances < skipped / 2  # quiet pairs went at once
    # a small pool: preemptions, and pairs cut where the free blocks run out
    compare({**config, "num_gpu_blocks": 120}, SPECS, 0.6)


def test_a_leap_gets_to_its_first_record_by_the_quiet_pairs_too() -> None:
    config = EngineConfig.from_dict({"num_gpu_blocks": 400, "max_num_seqs": 24,
                                     "max_num_batched_tokens": 512, "async_scheduling": True})
    engine = Engine(config, SPECS)
    advance_to(engine, 300)
    assert engine.iter == 300


# priced by the cost model (its decode_pricer takes the quiet pairs up to an arrival pair by
# pair, async_fast_forward.stretch_times), at TP 1 and with TP 2's all-reduce terms
LLAMA = {"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100"}
priced_st = st.sampled_from([{}, LLAMA, {**LLAMA, "tensor_parallel_size": 2}])

rows_st = st.lists(st.tuples(st.integers(1, 90), st.integers(1, 80), st.integers(0, 40),
                             st.sampled_from([(), (("sys", 32),), (("sys", 20),)])),
                   min_size=8, max_size=30)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=rows_st, time_clock=st.booleans(), cut=st.floats(0, 1), priced=priced_st,
       config=st.fixed_dictionaries({
           "block_size": st.sampled_from([1, 4, 16]), "num_gpu_blocks": st.integers(24, 300),
           "max_num_seqs": st.integers(8, 32), "max_num_batched_tokens": st.integers(32, 256),
           "enable_prefix_caching": st.booleans()}))
def test_any_run_ahead_under_async_records_what_stepping_records(rows: list, time_clock: bool,
                                                                 cut: float, priced: dict,
                                                                 config: dict) -> None:
    specs = [RequestSpec(f"r{i}", p, o, prefix=pre,
                         **({"arrival_s": a * 0.013} if time_clock else {"arrival_step": a}))
             for i, (p, o, a, pre) in enumerate(rows)]
    compare({**config, **priced}, specs, cut)


def finish_pairs(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """What each finish_pair the run-ahead tries answers (True: it finished requests)."""
    answers: list[bool] = []
    real = async_fast_forward.finish_pair

    def spy(engine: async_fast_forward.Engine) -> bool:
        answers.append(real(engine))
        return answers[-1]

    monkeypatch.setattr(async_fast_forward, "finish_pair", spy)
    return answers


# 40 requests at once, each finishing at a step of its own, then one every 50 ms while they decode
BURST = [RequestSpec(f"r{i}", 20 + 3 * i, 10 + 7 * i, arrival_s=0.05 * max(i - 39, 0))
         for i in range(60)]


def test_finishes_and_arrivals_inside_a_run_ahead(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = finish_pairs(monkeypatch)
    config = {"num_gpu_blocks": 2000, "block_size": 16, "max_num_seqs": 64,
              "max_num_batched_tokens": 512, "enable_prefix_caching": True}
    advances, _ = compare(config, BURST, 0.9)
    assert sum(answers) >= 30  # most finishes went inside a skip, not in a step of their own
    assert advances < sum(answers)
    # a pool that preempts (41 times), with quiet spells between: still exact
    small = {**config, "num_gpu_blocks": 300}
    stepped = Engine(EngineConfig.from_dict({**small, "async_scheduling": True}), BURST)
    assert any(record.preempted for record in stepped.run())
    answers.clear()
    compare(small, BURST, 0.95)
    assert sum(answers) >= 5


burst_st = st.lists(st.tuples(st.integers(1, 60), st.integers(1, 60), st.booleans()),
                    min_size=6, max_size=30)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=burst_st, time_clock=st.booleans(), cut=st.floats(0.3, 1), gap=st.integers(1, 9),
       priced=priced_st, config=st.fixed_dictionaries({
           "block_size": st.sampled_from([1, 4, 16]), "num_gpu_blocks": st.integers(20, 200),
           "max_num_seqs": st.integers(4, 32), "max_num_batched_tokens": st.integers(64, 256),
           "enable_prefix_caching": st.booleans()}))
def test_any_burst_run_ahead_finishes_as_stepping_does(rows: list, time_clock: bool, cut: float,
                                                       gap: int, priced: dict,
                                                       config: dict) -> None:
    """A burst (the rows marked True arrive at once) decoding to many finishes, the others
    arriving one every `gap` steps (or gap * 13 ms) while it decodes; small pools preempt."""
    due = [gap * i * (not burst) for i, (_, _, burst) in enumerate(rows)]
    specs = [RequestSpec(f"r{i}", p, o, **({"arrival_s": 0.013 * at} if time_clock
                                           else {"arrival_step": at}))
             for i, ((p, o, _), at) in enumerate(zip(rows, due, strict=True))]
    config = {**config, **priced}
    cfg = EngineConfig.from_dict({**config, "async_scheduling": True})
    event("preempts" if any(r.preempted for r in Engine(cfg, specs).run()) else "no preemption")
    compare(config, specs, cut)


def test_priced_pairs_stop_at_the_first_update_that_reaches_an_arrival(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Pair j's plan admits what is due when it is made, at the end of the step pair j updates
    (core/batch_queue.py): the pairs run up to and including the first whose update ends at
    or after the arrival, and the run ahead stays exact."""
    cuts: list[bool] = []
    real = async_fast_forward.stretch_times

    def spy(step_time: object, start: object, num_pairs: int, first_end_s: float,
            arrival_s: float | None) -> tuple:
        got = real(step_time, start, num_pairs, first_end_s, arrival_s)  # type: ignore[arg-type]
        pairs, _, ends = got
        assert len(ends) == pairs and list(ends) == sorted(ends) and ends[0] == first_end_s
        if arrival_s is not None:
            assert all(end < arrival_s for end in ends[:-1])
            assert pairs == num_pairs or ends[-1] >= arrival_s
            cuts.append(pairs < num_pairs)
        return got

    monkeypatch.setattr(async_fast_forward, "stretch_times", spy)
    config = {**LLAMA, "num_gpu_blocks": 2000, "block_size": 16, "max_num_seqs": 64,
              "max_num_batched_tokens": 512, "enable_prefix_caching": True}
    compare(config, BURST, 0.9)
    assert sum(cuts) >= 5  # arrivals cut quiet stretches
