"""Reading an uploaded trace into a session's workload: a step recording longer than a session
replays is cut, and the session's notes say so."""

from __future__ import annotations

from pathlib import Path

import pytest

from servescope.api.uploads import trace_workload

RECORDING = Path(__file__).resolve().parents[3] / "traces" / "recordings" / "ample_kv.jsonl"


def test_a_recording_longer_than_a_session_replays_is_cut_and_says_so(
        monkeypatch: pytest.MonkeyPatch) -> None:
    _, whole, report = trace_workload.read_trace(RECORDING)
    assert whole.records is not None and len(whole.records) > 10
    assert not any("only the first" in note for note in report.notes)
    monkeypatch.setattr(trace_workload, "MAX_RECORDS", 10)
    _, cut, report = trace_workload.read_trace(RECORDING)
    assert cut.records == whole.records[:10]
    assert any("more than 10 steps; only the first 10 are replayed" in note
               for note in report.notes)
