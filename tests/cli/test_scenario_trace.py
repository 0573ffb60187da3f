"""`diagnose` and `export` take a request trace (`--trace FILE` and the upload options as flags)
as `sim --trace` does: the same requests, the same run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli_trace import AZURE, CONFIG

from servescope.cli import main


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "azure.csv").write_text(AZURE)
    (tmp_path / "c.json").write_text(json.dumps(CONFIG))
    return tmp_path


def test_export_reads_a_trace_and_sim_agrees(files: Path) -> None:
    bench, summary = files / "b.json", files / "s.json"
    args = ["--trace", str(files / "azure.csv"), "--config", str(files / "c.json"),
            "--limit", "3"]
    assert main(["export", *args, "--bench", str(bench)]) == 0
    assert main(["sim", *args, "--summary", str(summary)]) == 0
    exported, simulated = json.loads(bench.read_text()), json.loads(summary.read_text())
    assert exported["input_lens"] == [120, 40, 300]  # the first three rows, in arrival order
    for key in ("completed", "total_output_tokens", "mean_ttft_ms", "p99_itl_ms"):
        assert exported[key] == simulated[key]


def test_export_perfetto_is_the_output_and_trace_the_input(files: Path) -> None:
    out = files / "p.json"
    assert main(["export", "--trace", str(files / "azure.csv"), "--config",
                 str(files / "c.json"), "--perfetto", str(out)]) == 0
    names = {e["args"]["name"] for e in json.loads(out.read_text())["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] == 2}
    assert len(names) == 4


def test_diagnose_reads_a_trace(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = files / "d.json"
    assert main(["diagnose", "--trace", str(files / "azure.csv"), "--config",
                 str(files / "c.json"), "--no-check", "--json", str(out)]) == 0
    assert "dominant:" in capsys.readouterr().out
    assert "verdicts" in json.loads(out.read_text())


def test_trace_errors_name_the_option_or_the_clash(files: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--config", str(files / "c.json"), "--bench", str(files / "b.json")]
    assert main(["export", "--trace", str(files / "azure.csv"), "--limit", "0", *base]) == 2
    assert "--limit" in capsys.readouterr().err
    assert main(["export", "--trace", str(files / "azure.csv"), "--workload",
                 str(files / "azure.csv"), *base]) == 2
    assert "not both" in capsys.readouterr().err
    assert not (files / "b.json").exists()
