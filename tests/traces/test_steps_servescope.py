import json
from pathlib import Path

import pytest
from support.trace_load import load

from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.request import RequestSpec
from servescope.traces.errors import TraceFormatError
from servescope.traces.recording import header, write_recording

RECORDINGS = Path(__file__).resolve().parents[2] / "traces" / "recordings"


def _sim_recording(path: Path) -> list[dict]:
    config = EngineConfig.from_dict(dict(block_size=4, num_gpu_blocks=12, max_num_seqs=4,
                                         max_num_batched_tokens=16, enable_prefix_caching=True))
    specs = [RequestSpec(f"r{i}", 9 + 3 * i, 4 + i, arrival_step=i, prefix=(("sys", 8),))
             for i in range(5)]
    write_recording(path, header(config, specs, "simulated"), Engine(config, specs).run())
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_simulated_recording_round_trips_exactly(tmp_path):
    lines = _sim_recording(tmp_path / "run.jsonl")
    records, report = load(tmp_path / "run.jsonl", "servescope-steps")
    assert [r.to_dict() for r in records] == lines[1:]
    assert any(r.preempted for r in records) or any(r.block_events for r in records)
    assert report.meta["version"] == 1 and report.meta["source"] == "simulated"
    assert [q["id"] for q in report.meta["requests"]] == [f"r{i}" for i in range(5)]


@pytest.mark.parametrize("path", sorted(RECORDINGS.glob("*.jsonl")), ids=lambda p: p.stem)
def test_the_projects_own_recordings_round_trip(path):
    lines = path.read_text().splitlines()
    records, _ = load(path, "servescope-steps")
    assert [r.to_dict() for r in records] == [json.loads(line) for line in lines[1:]]


@pytest.mark.parametrize("head, field", [
    ({"format": "servescope-steps", "version": 99}, "version"),
    ({"format": "other", "version": 1}, "format"),
    ({"format": "servescope-steps", "version": 1, "config": []}, "config"),
])
def test_bad_headers_refused(write, head, field):
    with pytest.raises(TraceFormatError) as info:
        load(write("r.jsonl", json.dumps(head) + "\n"), "servescope-steps")
    assert (info.value.line, info.value.field) == (1, field)


@pytest.mark.parametrize("change, field", [
    ({"step": -1}, "step"), ({"scheduled": [{"id": "r0", "n": "x", "start": 0}]}, "n"),
    ({"scheduled": [{"id": "r0", "n": 1, "start": 0, "kind": "both"}]}, "scheduled.kind"),
    ({"running": "r0"}, "running"), ({"num_usable_blocks": 0}, "num_usable_blocks"),
    ({"kv_events": [{"type": "Nope"}]}, "kv_events.type"),
    ({"new_blocks": {"r0": [1, -2]}}, "new_blocks"),
])
def test_first_bad_record_line_and_field(tmp_path, change, field):
    lines = _sim_recording(tmp_path / "run.jsonl")
    bad = {**lines[2], **change}
    text = "\n".join(json.dumps(x) for x in [lines[0], lines[1], bad, {"junk": 1}]) + "\n"
    (tmp_path / "bad.jsonl").write_text(text)
    with pytest.raises(TraceFormatError) as info:
        load(tmp_path / "bad.jsonl", "servescope-steps")
    assert (info.value.line, info.value.field) == (3, field)
