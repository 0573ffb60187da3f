"""Our engine against the project's own recordings of vLLM 0.33's scheduler (traces/recordings,
made by traces/recordings/generate.py with servescope.capture): every step identical."""

from __future__ import annotations

from pathlib import Path

import pytest

from servescope.capture.replay import first_difference, read_recording, replay, views

RECORDINGS = Path(__file__).resolve().parents[2] / "traces" / "recordings"
FILES = sorted(RECORDINGS.glob("*.jsonl"))


def test_the_recordings_cover_the_cases() -> None:
    names = {p.stem for p in FILES}
    assert {"ample_kv", "preemption_heavy", "long_prefill_chunked", "long_prefill_lpt256",
            "prefix_sysprompt", "priority_preemption"} <= names
    for path in FILES:
        assert path.stat().st_size < 1_000_000, path.name


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_engine_reproduces_recording(path: Path) -> None:
    head, rows = read_recording(path)
    assert head["source"] == "recorded"
    assert head["recorder"]["vllm_version"] == "0.33.0"
    assert rows, "empty recording"
    problem = first_difference(list(views(replay(head))), list(views(rows)))
    assert problem is None, f"{path.name}: {problem}"


def test_recordings_exercise_preemption_and_prefix_caching() -> None:
    _, heavy = read_recording(RECORDINGS / "preemption_heavy.jsonl")
    assert sum(len(r["preempted"]) for r in heavy) >= 10
    assert sum(len(r["resumed"]) for r in heavy) >= 10
    head, shared = read_recording(RECORDINGS / "prefix_sysprompt.jsonl")
    assert sum(sum(r["num_cached_tokens"].values()) for r in shared) > 0
    assert any(e["type"] == "BlockRemoved" for r in shared for e in r["kv_events"])
    assert all(r.get("prefix") for r in head["requests"])


def test_a_changed_decision_is_caught() -> None:
    head, rows = read_recording(RECORDINGS / "long_prefill_lpt256.jsonl")
    head["config"]["long_prefill_token_threshold"] = 0
    assert first_difference(list(views(replay(head))), list(views(rows))) is not None


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_recordings_read_back_as_step_records(path: Path) -> None:
    """The project's step reader turns every line into a StepRecord whose to_dict() is it."""
    from servescope.traces import steps_servescope
    from servescope.traces.report import TraceReport

    _, rows = read_recording(path)
    records = list(steps_servescope.read(path, TraceReport("servescope-steps", "steps")))
    assert [r.to_dict() for r in records] == rows
