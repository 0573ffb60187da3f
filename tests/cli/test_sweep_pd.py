"""`servescope sweep --pd-gpus N`: P/D splits of N GPUs against the colocated fleets of N
GPUs from the grid file, and the answer in words naming the best of each and which wins at
which load; a bad grid entry refused in one line that names it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from servescope.cli import main

BASE = {"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100", "async_scheduling": False}


def mixed_trace(path: Path, n: int = 60) -> Path:
    """Azure-format CSV: short chats (200 in, 100 out), a 6000-token document every fifth."""
    rng = np.random.default_rng(1)
    t, rows = 0.0, ["TIMESTAMP,ContextTokens,GeneratedTokens"]
    for i in range(n):
        t += float(rng.exponential(0.08))
        long = i % 5 == 0
        rows.append(f"2023-11-16 18:00:{t:09.6f},{6000 if long else 200},{16 if long else 100}")
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.fixture
def inputs(tmp_path: Path) -> list[str]:
    (tmp_path / "base.json").write_text(json.dumps(BASE))
    return ["sweep", "--trace", str(mixed_trace(tmp_path / "t.csv")), "--config",
            str(tmp_path / "base.json"), "--out", str(tmp_path / "out.json")]


def test_the_answer_compares_the_best_pd_with_the_best_colocated_per_load(
        inputs: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    grid = tmp_path / "grid.json"
    grid.write_text(json.dumps({"loads": [0.5, 2],
                                "pools": [{}, {"decode": {"max_num_seqs": 64}}],
                                "colocated": [{"router": "round-robin"},
                                              {"router": "least-requests"}]}))
    assert main([*inputs, "--pd-gpus", "2", "--grid", str(grid)]) == 0
    result = json.loads((tmp_path / "out.json").read_text())
    low, high = result["loads"]
    assert [p["label"] for p in high["points"]] == ["P/D 1:1", "P/D 1:1 (decode.max_num_seqs=64)"]
    assert len(high["colocated_points"]) == 2
    best_colocated = min(high["colocated_points"], key=lambda p: p["value"])
    # long prefills stall a colocated replica's decodes at twice the rate: P/D wins there
    assert high["best_pd"]["value"] < best_colocated["value"]
    said = capsys.readouterr().out
    assert said.startswith("On 2 GPUs:")
    assert (f"At load x2, {high['best_pd']['label']} wins on p99_itl_ms: "
            f"{high['best_pd']['value']:.1f} ms against {best_colocated['value']:.1f} ms for "
            f"{best_colocated['label']}.") in said
    assert "At load x0.5, " in said


@pytest.mark.parametrize(("grid", "field"), [({"pools": [{"middle": {}}]}, "pools[0].middle"),
                                              ({"loads": [0]}, "loads[0]"),
                                              ({"replicas": [2]}, "replicas")])
def test_a_bad_pd_grid_is_refused_naming_the_entry(
        inputs: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        grid: dict[str, object], field: str) -> None:
    (tmp_path / "g.json").write_text(json.dumps(grid))
    assert main([*inputs, "--pd-gpus", "2", "--grid", str(tmp_path / "g.json")]) == 2
    assert f"{field}:" in capsys.readouterr().err


def test_a_grid_sweep_still_needs_its_grid(inputs: list[str],
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(inputs) == 2
    assert "--grid" in capsys.readouterr().err
