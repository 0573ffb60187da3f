"""A track stores a decode stretch in bulk (api/records/stretch_pack.py) exactly as it stores the
run's records one by one: the same packed rows and columns, keyframes, stream state and meter, on
random workloads over every policy and on runs made to finish, cross blocks and hold keyframes."""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.tracks import run_to_end

from servescope.api.records.stretch_pack import StretchPack
from servescope.api.records.track_source import engine_source
from servescope.api.sessions.track import Track
from servescope.api.wire.keyframes import keyframe
from servescope.api.wire.serialize import dumps, normalize, pack, request_info
from servescope.api.wire.stream_state import StreamState
from servescope.api.wire.text import dump
from servescope.core.config import POLICIES, EngineConfig
from servescope.core.decode_stretch import DecodeStretch
from servescope.core.engine import Engine
from servescope.core.request import RequestSpec
from servescope.observability.meter import HISTOGRAMS


def folded(state: StreamState) -> dict[str, Any]:
    """What a state holds from the records folded in, but `last` (a run leaves it None) and
    the keyframe's column cache (compared through the stored keyframes)."""
    kept_apart = ("last", "columns", "touched", "table", "final_counts")  # the list and its caches
    return {k: v for k, v in vars(state).items() if k not in kept_apart}


def check_keyframes(track: Track, mismatched: list[int]) -> None:
    """Check every keyframe of `track`, built from the requests touched since the last one,
    against one built from every request; the records where they differ go to `mismatched`."""
    writer = track.writer
    take = writer.take_keyframe

    def checked(n: int) -> None:
        whole = copy.copy(writer.state)
        whole.columns = None
        expected = dump(keyframe(whole, track.number, track.num_gpu_blocks))
        take(n)
        if writer.kfs[-1][1] != expected:
            mismatched.append(n)
    writer.take_keyframe = checked  # type: ignore[method-assign]


def simulate(config: EngineConfig, specs: list[RequestSpec], path: Path, runs: bool,
             interval: int, max_records: int) -> tuple[Track, list[DecodeStretch]]:
    """A track to its end through one path; the decode stretches it was given."""
    engine = Engine(config, specs)
    source, seen = engine_source(engine, runs=runs), []

    def logged() -> Any:
        item = source()
        if isinstance(item, DecodeStretch):
            seen.append(item)
        return item
    track = Track(0, logged, request_info(specs), config.num_gpu_blocks or 0, interval,
                  max_records, path, summary=engine.summary,
                  enable_prefix_caching=config.enable_prefix_caching)
    mismatched: list[int] = []
    check_keyframes(track, mismatched)
    run_to_end(track)
    assert mismatched == []
    return track, seen


def stored(track: Track) -> tuple[list[tuple], list[tuple]]:
    db = track.store._reader
    return (db.execute("SELECT * FROM records ORDER BY iter").fetchall(),
            db.execute("SELECT * FROM keyframes ORDER BY iter").fetchall())


def metered(track: Track) -> tuple[list[dict[str, float]], list[float], list[tuple]]:
    """Every record's gauges and counters, its start, and every histogram's observations."""
    m = track.meter
    return ([m.row(pos) for pos in range(m.num_records)], list(m.start_s),
            [m.observations(name) for name in HISTOGRAMS])


def both_paths(config: EngineConfig, specs: list[RequestSpec], interval: int = 4,
               max_records: int = 1_000_000) -> tuple[Track, list[DecodeStretch], list[int]]:
    """Simulate through the per-record path and the stretch path; everything kept must agree. The
    run path's track (closed), the runs it got and the records its keyframes follow."""
    with tempfile.TemporaryDirectory() as tmp:
        old, none = simulate(config, specs, Path(tmp) / "old.sqlite3", False, interval,
                             max_records)
        new, runs = simulate(config, specs, Path(tmp) / "new.sqlite3", True, interval,
                             max_records)
        assert not none
        records, keyframes = stored(old)
        assert stored(new) == (records, keyframes)  # every column, every byte of JSON
        assert len(records) == old.head + 1 == new.head + 1
        assert metered(new) == metered(old)
        assert (new.error, new.summary) == (old.error, old.summary)
        assert new.writer.preempted == old.writer.preempted
        assert folded(new.state) == folded(old.state)
        for track in (old, new):
            track.close()
        return new, runs, [kf for kf, _ in keyframes]


rows_st = st.lists(st.tuples(st.integers(1, 90), st.integers(1, 120), st.integers(0, 60),
                             st.sampled_from([(), (("sys", 32),), (("sys", 20),)]),
                             st.integers(0, 2)),
                   min_size=1, max_size=16)
config_st = st.fixed_dictionaries({
    "policy": st.sampled_from(POLICIES),
    "scheduling_policy": st.sampled_from(["fcfs", "priority"]),
    "block_size": st.sampled_from([1, 4, 16]),
    "num_gpu_blocks": st.integers(24, 300),
    "max_num_seqs": st.integers(4, 32),
    "max_num_batched_tokens": st.integers(32, 256),  # small: prefills chunked
    "enable_prefix_caching": st.booleans(),
    "static_batch_size": st.integers(1, 6),
})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=config_st, rows=rows_st, time_clock=st.booleans(),
       interval=st.integers(1, 12), max_records=st.sampled_from([1_000_000, 7, 40, 150]))
def test_the_run_path_stores_what_the_per_record_path_stores(
        config: dict, rows: list, time_clock: bool, interval: int, max_records: int) -> None:
    if config["policy"] == "static" and config["scheduling_policy"] == "priority":
        config["scheduling_policy"] = "fcfs"
    specs = [RequestSpec(f"r{i}", p, o, prefix=pre, priority=prio,
                         **({"arrival_s": a * 0.013} if time_clock else {"arrival_step": a}))
             for i, (p, o, a, pre, prio) in enumerate(rows)]
    both_paths(EngineConfig.from_dict(config), specs, interval, max_records)


def long_decodes(n: int, prefix: tuple = ()) -> list[RequestSpec]:
    """Few arrivals, long outputs: most steps are decode stretches, each ending where one finishes
    or someone arrives."""
    return [RequestSpec(f"d{k}", 9 + 5 * k, 60 + 17 * k, arrival_s=k * 0.3, prefix=prefix)
            for k in range(n)]


def inside(kf_iter: int, run: DecodeStretch) -> bool:
    return run.iter0 <= kf_iter < run.iter0 + run.num_steps - 1


@pytest.mark.parametrize("caching", [True, False])
def test_runs_that_finish_cross_blocks_and_hold_keyframes_store_the_same(caching: bool) -> None:
    config = EngineConfig(num_gpu_blocks=48, block_size=4, enable_prefix_caching=caching)
    specs = long_decodes(8, (("sys", 12),)) + long_decodes(4)
    track, runs, keyframes = both_paths(config, specs, interval=5)
    assert len(runs) > 5 and track.error is None
    assert any(run.finished for run in runs)
    assert any(len(run.kv.steps) for run in runs)  # block boundaries crossed inside runs
    assert any(inside(kf, run) for kf in keyframes for run in runs)
    events = any(run.kv.stored for run in runs) and any(run.kv.evicted for run in runs)
    assert events == caching  # cached blocks completed and evicted within runs, when on


def test_a_prefill_one_token_short_samples_its_first_token_in_a_runs_first_step() -> None:
    """Beside a decoding request a prefill gets 31 tokens of a 32-token budget a step: a
    63-token prompt stops one token short, and its last token, its first output, opens a run."""
    config = EngineConfig(num_gpu_blocks=64, block_size=4, max_num_batched_tokens=32,
                          max_num_seqs=4)
    specs = [RequestSpec("a", 5, 60, arrival_s=0.0), RequestSpec("b", 63, 40, arrival_s=0.01)]
    _, runs, _ = both_paths(config, specs)
    assert any(run.ids == ("a", "b") and run.start0[1] == 62 for run in runs)


def test_a_record_limit_inside_a_run_stores_the_same_records_and_says_so() -> None:
    config = EngineConfig(num_gpu_blocks=48, block_size=4)
    _, runs, _ = both_paths(config, long_decodes(4))
    cut = runs[1].iter0 + runs[1].num_steps // 2
    track, _, _ = both_paths(config, long_decodes(4), max_records=cut)
    assert track.head == cut - 1 and "max_records_per_session (" in (track.error or "")



def _tweak(state: StreamState, how: str, run: DecodeStretch) -> None:
    first = state.running[0]
    if how == "step":
        state.step += 5
    elif how == "running":
        state.running = state.running[::-1]
    elif how == "waiting":
        state.waiting = ["d7"]
    elif how == "computed":
        state.computed[first] -= 1
    elif how == "outputs":
        state.outputs[first] = 0
    elif how == "prompt":  # the same number of tokens, none of them output
        state.prompt_len[first] += state.outputs.pop(first)
    elif how == "carried":
        state.carried = dict.fromkeys(state.carried)
    elif how == "waste order":  # its first step's values in another order: "kw", not "kd"
        state.carried["kv_waste"] = dict(reversed(next(run.records()).kv_waste.items()))
    elif how == "waste":  # values to change by position ("kd")
        state.carried["kv_waste"] = dict.fromkeys(state.carried["kv_waste"], -1)


@pytest.mark.parametrize("how", ["none", "step", "running", "waiting", "computed", "outputs",
                                 "prompt", "carried", "waste order", "waste"])
def test_a_runs_records_pack_as_pack_packs_them_against_any_state_before_it(how: str) -> None:
    """What `pack` compares with the state before a run (the step clock, queues, positions,
    token counts, carried values), made to differ; 128 usable blocks: kv_usage then often
    rounds half-way, where Python's round and the browser's disagree ("ku")."""
    specs = long_decodes(6)
    engine = Engine(EngineConfig(num_gpu_blocks=129, block_size=4), specs)
    state, n = StreamState(request_info(specs)), 0
    while not isinstance(item := engine.advance(), DecodeStretch):
        assert item is not None
        pack(state, {**normalize(item.to_dict()), "iter": n})
        n += 1
    _tweak(state, how, item)
    expected_state = copy.deepcopy(state)
    expected = [dumps(pack(expected_state, {**normalize(r.to_dict()), "iter": n + j}))
                for j, r in enumerate(item.records())]
    packed = StretchPack(state, item, n)
    assert packed.texts == expected
    assert any('"ku":' in text for text in expected) and len(set(expected)) == len(expected)
    packed.apply(state, 0, 3)
    packed.apply(state, 3, item.num_steps)
    assert folded(state) == folded(expected_state)
    assert packed.record(item.num_steps - 1) == expected_state.last
