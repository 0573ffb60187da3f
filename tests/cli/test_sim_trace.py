"""`servescope sim --trace`: any request-trace format with the upload options as flags, the same
run as the equivalent workload JSON, and errors that name the option or the line and field."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli_trace import AZURE, CONFIG

ROWS = [(0.0, 120, 7), (0.5, 40, 3), (1.25, 300, 12), (2.0, 64, 5)]


def _sim(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "servescope.cli", "sim", *args],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "azure.csv").write_text(AZURE)
    (tmp_path / "c.json").write_text(json.dumps(CONFIG))
    return tmp_path


def _summary(done: subprocess.CompletedProcess[str]) -> dict[str, float]:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_trace_runs_as_its_workload_json_does(files: Path) -> None:
    workload = [{"id": f"w{i}", "arrival_s": t, "prompt_len": p, "output_len": o}
                for i, (t, p, o) in enumerate(ROWS)]
    (files / "w.json").write_text(json.dumps(workload))
    from_trace = _summary(_sim("--trace", str(files / "azure.csv"), "--config",
                               str(files / "c.json")))
    from_json = _summary(_sim("--workload", str(files / "w.json"), "--config",
                              str(files / "c.json")))
    assert from_trace == from_json
    assert from_trace["completed"] == 4
    assert from_trace["total_output_tokens"] == sum(o for _, _, o in ROWS)


def test_the_options_shape_the_trace(files: Path) -> None:
    args = ["--trace", str(files / "azure.csv"), "--config", str(files / "c.json")]
    limited = _summary(_sim(*args, "--limit", "2"))
    assert limited["completed"] == 2 and limited["total_input_tokens"] == 160
    windowed = _summary(_sim(*args, "--window-start-s", "1", "--window-end-s", "2.5"))
    assert windowed["total_input_tokens"] == 300 + 64
    scaled = _summary(_sim(*args, "--length-scale", "2", "--format", "azure"))
    assert scaled["total_output_tokens"] == 2 * sum(o for _, _, o in ROWS)


def test_bad_options_and_files_are_named(files: Path) -> None:
    args = ["--trace", str(files / "azure.csv"), "--config", str(files / "c.json")]
    done = _sim(*args, "--limit", "0")
    assert done.returncode == 2 and "--limit" in done.stderr and "Traceback" not in done.stderr
    done = _sim(*args, "--format", "nope")
    assert done.returncode == 2 and "unknown format 'nope'" in done.stderr
    (files / "bad.csv").write_text(AZURE.replace(",300,", ",x,"))
    done = _sim("--trace", str(files / "bad.csv"), "--config", str(files / "c.json"))
    assert done.returncode == 2 and "line 4" in done.stderr and "ContextTokens" in done.stderr
    done = _sim("--trace", str(files / "azure.csv"), "--workload", str(files / "azure.csv"),
                "--config", str(files / "c.json"))
    assert done.returncode == 2 and "not allowed with" in done.stderr
