"""Our engine against the project's own recordings of vLLM 0.33's scheduler (traces/recordings,
made by traces/recordings/generate.py with servescope.capture; async_* with its AsyncScheduler):
every step identical."""

from __future__ import annotations

from pathlib import Path

import pytest

from servescope.capture.replay import first_difference, read_recording, replay, views

RECORDINGS = Path(__file__).resolve().parents[2] / "traces" / "recordings"
FILES = sorted(RECORDINGS.glob("*.jsonl"))


def test_the_recordings_cover_the_cases() -> None:
    names = {p.stem for p in FILES}
    assert {"ample_kv", "preemption_heavy", "long_prefill_chunked", "long_prefill_lpt256",
            "prefix_sysprompt", "priority_preemption", "async_tight_kv",
            "async_preemption_heavy", "async_prefix_sysprompt", "async_block32",
            "async_last_token_in_flight", "spec_ample_kv", "spec_tight_kv", "spec_chunked",
            "spec_prefix", "async_spec_ample_kv", "async_spec_tight_kv", "async_spec_chunked",
            "async_spec_prefix", "spec_loaded", "async_spec_loaded", "spec_eagle3_tight_kv",
            "async_spec_eagle3_tight_kv", "spec_eagle3_prefix", "async_spec_eagle3_prefix"
            } <= names
    for path in FILES:
        assert path.stat().st_size < 1_000_000, path.name


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_engine_reproduces_recording(path: Path) -> None:
    head, rows = read_recording(path)
    assert head["source"] == "recorded"
    assert head["recorder"]["vllm_version"] == "0.33.0"
    assert rows, "empty recording"
    asynchronous = head["config"].get("async_scheduling", False)
    assert asynchronous == path.stem.startswith("async_") == head["recorder"]["async_scheduling"]
    problem = first_difference(list(views(replay(head), asynchronous)),
                               list(views(rows, asynchronous)))
    assert problem is None, f"{path.name}: {problem}"


def test_recordings_exercise_preemption_and_prefix_caching() -> None:
    _, heavy = read_recording(RECORDINGS / "preemption_heavy.jsonl")
    assert sum(len(r["preempted"]) for r in heavy) >= 10
    assert sum(len(r["resumed"]) for r in heavy) >= 10
    head, shared = read_recording(RECORDINGS / "prefix_sysprompt.jsonl")
    assert sum(sum(r["num_cached_tokens"].values()) for r in shared) > 0
    assert any(e["type"] == "BlockRemoved" for r in shared for e in r["kv_events"])
    assert all(r.get("prefix") for r in head["requests"])


def test_async_recordings_exercise_what_async_scheduling_changes() -> None:
    """Preemption and resume, prefix hits and evictions, 32-token blocks, and a request
    preempted while its last token was in flight that finished from the queue."""
    _, tight = read_recording(RECORDINGS / "async_tight_kv.jsonl")
    _, heavy = read_recording(RECORDINGS / "async_preemption_heavy.jsonl")
    assert sum(len(r["preempted"]) for r in tight) >= 2
    assert sum(len(r["resumed"]) for r in heavy) >= 10
    for name in ("async_prefix_sysprompt", "async_block32"):
        head, rows = read_recording(RECORDINGS / f"{name}.jsonl")
        assert sum(sum(r["num_cached_tokens"].values()) for r in rows) > 0, name
        assert any(e["type"] == "BlockRemoved" for r in rows for e in r["kv_events"]), name
    assert head["config"]["block_size"] == 32 and any(r["preempted"] for r in rows)
    _, flight = read_recording(RECORDINGS / "async_last_token_in_flight.jsonl")
    assert any(rid in after["preempted"]
               for before, after in zip(flight, flight[1:], strict=False)
               for rid in before["finished"])


@pytest.mark.parametrize("name", ["async_tight_kv", "async_block32"])
def test_the_sync_scheduler_is_caught_on_an_async_recording(name: str) -> None:
    head, rows = read_recording(RECORDINGS / f"{name}.jsonl")
    head["config"]["async_scheduling"] = False
    assert first_difference(list(views(replay(head), True)), list(views(rows, True))) is not None


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


@pytest.mark.parametrize("prefix", ["spec_", "async_spec_"])
def test_spec_recordings_exercise_what_speculation_changes(prefix: str) -> None:
    """Drafts partly accepted, preemptions, drafts trimmed beside a prefill chunk, and padded
    full-hit admissions, each with the workload's explicit spec_accepted lists."""
    def rows(name: str) -> list[dict]:
        return read_recording(RECORDINGS / f"{prefix}{name}.jsonl")[1]

    entries = [s for r in rows("ample_kv") for s in r["scheduled"]]
    assert {s["accepted"] for s in entries if s["drafts"] == 3} >= {0, 1, 2, 3}
    assert sum(len(r["preempted"]) for r in rows("tight_kv")) >= 2
    chunked = rows("chunked")
    assert any(0 < s["drafts"] < 3 for r in chunked for s in r["scheduled"]) or any(
        s["kind"] == "prefill" and s["n"] < 128 for r in chunked for s in r["scheduled"])
    prefix_rows = rows("prefix")
    assert sum(sum(r["num_cached_tokens"].values()) for r in prefix_rows) > 0
    padded = [s for r in prefix_rows for s in r["scheduled"] if s["id"] in r["new"]
              and s["drafts"]]
    assert padded and all(s["accepted"] == 0 and s["n"] == 4 for s in padded)


def test_a_changed_acceptance_is_caught() -> None:
    head, rows = read_recording(RECORDINGS / "spec_ample_kv.jsonl")
    first = head["requests"][0]
    first["spec_accepted"] = [3 - a for a in first["spec_accepted"]]
    assert first_difference(list(views(replay(head))), list(views(rows))) is not None


def _verifies(name: str) -> list[dict]:
    return [s for r in read_recording(RECORDINGS / f"{name}.jsonl")[1] for s in r["scheduled"]
            if s["drafts"]]


def test_under_load_async_scheduling_drafts_as_much_as_sync() -> None:
    """vLLM's AsyncScheduler gives every decode K placeholder drafts when it is scheduled
    (AsyncScheduler._update_after_schedule; EngineCore.post_step never calls
    update_draft_token_ids under async): with up to 40 decodes of 1 + 5 tokens at once it
    verifies as many drafts as the sync scheduler does (a few more: steps in flight for
    requests that finished meanwhile). Our engine replays both step for step above."""
    sync, asynchronous = _verifies("spec_loaded"), _verifies("async_spec_loaded")
    head, rows = read_recording(RECORDINGS / "async_spec_loaded.jsonl")
    assert head["config"]["speculative_config"]["num_speculative_tokens"] == 5
    assert max(sum(1 for s in r["scheduled"] if s["drafts"]) for r in rows) >= 30
    assert len(sync) > 2500 and len(sync) <= len(asynchronous) <= 1.05 * len(sync)
    assert all(s["drafts"] == 5 for s in asynchronous if s["accepted"] >= 0)


@pytest.mark.parametrize("name", ["spec_eagle3_tight_kv", "async_spec_eagle3_tight_kv"])
def test_eagle3_recordings_check_the_lookahead_slots(name: str) -> None:
    """EAGLE-3 reserves K lookahead slots in every allocate_slots (VllmConfig.
    num_lookahead_tokens); the same run with ngram (no lookahead) decides otherwise, and the
    KV is tight enough to preempt."""
    head, rows = read_recording(RECORDINGS / f"{name}.jsonl")
    assert head["recorder"]["model_runner"] == "v2"
    assert sum(len(r["preempted"]) for r in rows) >= 2
    asynchronous = head["config"]["async_scheduling"]
    head["config"]["speculative_config"] = {**head["config"]["speculative_config"],
                                            "method": "ngram"}
    assert first_difference(list(views(replay(head), asynchronous)),
                            list(views(rows, asynchronous))) is not None


@pytest.mark.parametrize("name", ["spec_eagle3_prefix", "async_spec_eagle3_prefix"])
def test_eagle3_prefix_recordings_need_lookahead_hashes(name: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Prefix hits, a padded full hit, segments one token past their blocks (the recorder's
    lookahead rule); replayed with plain hashes, the engine departs from vLLM."""
    from servescope.core.scheduler import spec_decode

    head, rows = read_recording(RECORDINGS / f"{name}.jsonl")
    assert head["recorder"]["num_hash_lookahead_tokens"] == 1
    assert sum(sum(r["num_cached_tokens"].values()) for r in rows) > 0
    assert any(s["id"] in r["new"] and s["drafts"] for r in rows for s in r["scheduled"])
    assert {r["prefix"][0][1] % 16 for r in head["requests"] if r.get("prefix")} == {1}
    asynchronous = head["config"]["async_scheduling"]
    monkeypatch.setattr(spec_decode, "num_hash_lookahead_tokens", lambda spec, caching: 0)
    assert first_difference(list(views(replay(head), asynchronous)),
                            list(views(rows, asynchronous))) is not None
