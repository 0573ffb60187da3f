"""`servescope sim` end to end: records, summary, and one-line errors for bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "servescope.cli", *args],
                          capture_output=True, text=True, timeout=120)


def test_sim_writes_records_and_summary(tmp_path: Path) -> None:
    workload = [{"id": f"q{i}", "arrival_step": i, "prompt_len": 40 + 7 * i, "output_len": 5 + i}
                for i in range(6)]
    (tmp_path / "w.json").write_text(json.dumps(workload))
    (tmp_path / "c.json").write_text(json.dumps({"block_size": 8, "num_gpu_blocks": 64,
                                                 "max_num_batched_tokens": 64}))
    out, summary = tmp_path / "r.jsonl", tmp_path / "s.json"
    done = _run("sim", "--workload", str(tmp_path / "w.json"), "--config",
                str(tmp_path / "c.json"), "--out", str(out), "--summary", str(summary))
    assert done.returncode == 0, done.stderr
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert lines[0]["format"] == "servescope-steps" and lines[0]["version"] == 1
    steps = lines[1:]
    assert all(sum(e["n"] for e in s["scheduled"]) <= 64 for s in steps)
    assert sorted(f for s in steps for f in s["finished"]) == sorted(w["id"] for w in workload)
    result = json.loads(summary.read_text())
    assert result["completed"] == 6
    assert result["total_output_tokens"] == sum(w["output_len"] for w in workload)
    assert list(tmp_path.glob("*.tmp")) == []


def test_sim_reports_a_bad_config_key_without_traceback(tmp_path: Path) -> None:
    (tmp_path / "w.json").write_text("[]")
    (tmp_path / "c.json").write_text(json.dumps({"block_size": 24}))
    done = _run("sim", "--workload", str(tmp_path / "w.json"), "--config", str(tmp_path / "c.json"))
    assert done.returncode == 2
    assert "block_size" in done.stderr and "Traceback" not in done.stderr


def test_sim_names_the_bad_request(tmp_path: Path) -> None:
    text = json.dumps([{"id": "a", "prompt_len": 3, "output_len": 2, "arrival_step": 0},
                       {"id": "b", "output_len": 2, "arrival_step": 0}], indent=1)
    (tmp_path / "w.json").write_text(text)
    (tmp_path / "c.json").write_text(json.dumps({"num_gpu_blocks": 10}))
    done = _run("sim", "--workload", str(tmp_path / "w.json"), "--config", str(tmp_path / "c.json"))
    line_of_b = text[:text.index('"b"')].count("\n")  # the line its object opens on
    assert done.returncode == 2
    assert f"line {line_of_b}, field 'prompt_len'" in done.stderr


def test_sim_from_a_recordings_header_makes_the_recorded_decisions(tmp_path: Path) -> None:
    """The recordings of vLLM's scheduler with prefixes and priorities, re-simulated through the
    CLI from their own headers (a workload reader that drops `prefix` or `priority` fails)."""
    from servescope.capture.replay import first_difference, read_recording, views

    recordings = Path(__file__).resolve().parents[2] / "traces" / "recordings"
    for name in ("prefix_sysprompt", "priority_preemption"):
        head, rows = read_recording(recordings / f"{name}.jsonl")
        assert any(r.get("prefix") for r in head["requests"]) or any(
            r.get("priority") for r in head["requests"])
        (tmp_path / "w.json").write_text(json.dumps(head["requests"]))
        (tmp_path / "c.json").write_text(json.dumps(head["config"]))
        out = tmp_path / f"{name}.jsonl"
        done = _run("sim", "--workload", str(tmp_path / "w.json"), "--config",
                    str(tmp_path / "c.json"), "--out", str(out))
        assert done.returncode == 0, done.stderr
        _, ours = read_recording(out)
        assert first_difference(list(views(ours)), list(views(rows))) is None, name
