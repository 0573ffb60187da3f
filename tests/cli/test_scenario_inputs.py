"""Every subcommand that takes --workload/--config reads them as `servescope sim` does: the
run happens, and a bad file is named with its line and field, never with a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

WORKLOAD = [{"id": f"q{i}", "arrival_step": i, "prompt_len": 30 + 9 * i, "output_len": 4 + i}
            for i in range(5)]
CONFIG = {"block_size": 8, "num_gpu_blocks": 48, "max_num_batched_tokens": 64}


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "servescope.cli", *args],
                          capture_output=True, text=True, timeout=300)


@pytest.fixture
def scenario(tmp_path: Path) -> list[str]:
    (tmp_path / "w.json").write_text(json.dumps(WORKLOAD))
    (tmp_path / "c.json").write_text(json.dumps(CONFIG))
    return ["--workload", str(tmp_path / "w.json"), "--config", str(tmp_path / "c.json")]


def test_diagnose_runs_on_workload_and_config_files(scenario: list[str], tmp_path: Path) -> None:
    done = _cli("diagnose", *scenario, "--no-check", "--json", str(tmp_path / "d.json"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("dominant: ")
    result = json.loads((tmp_path / "d.json").read_text())
    assert {"dominant", "verdicts", "missing"} <= set(result)


def test_export_runs_on_workload_and_config_files(scenario: list[str], tmp_path: Path) -> None:
    bench = tmp_path / "bench.json"
    done = _cli("export", *scenario, "--bench", str(bench), "--csv", str(tmp_path / "r.csv"))
    assert done.returncode == 0, done.stderr
    result = json.loads(bench.read_text())
    assert result["completed"] == len(WORKLOAD)
    assert result["total_output_tokens"] == sum(w["output_len"] for w in WORKLOAD)
    rows = (tmp_path / "r.csv").read_text().splitlines()
    assert len(rows) == 1 + len(WORKLOAD)


@pytest.mark.parametrize("command", ["diagnose", "export"])
def test_a_bad_workload_is_named_not_a_traceback(command: str, scenario: list[str],
                                                 tmp_path: Path) -> None:
    bad = [dict(WORKLOAD[0]), {"id": "x", "arrival_step": 0, "output_len": 3}]
    (tmp_path / "w.json").write_text(json.dumps(bad, indent=1))
    extra = ["--no-check"] if command == "diagnose" else ["--bench", str(tmp_path / "b.json")]
    done = _cli(command, *scenario, *extra)
    assert done.returncode == 2
    assert "prompt_len" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "b.json").exists()
