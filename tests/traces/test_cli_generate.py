"""`servescope traces generate`: synthetic workloads written as workload JSON that the adapters,
`servescope sim` and the explorer read."""

import json

import numpy as np
import pytest
from support.trace_load import load

from servescope.cli import main


def _gaps_cv(path) -> float:
    specs, _ = load(path, "workload-json")
    gaps = np.diff([s.arrival_s for s in specs])
    return float(gaps.std() / gaps.mean())


def test_gamma_burstiness_shapes_the_gaps(tmp_path, capsys):
    cvs = {}
    for burstiness in (0.25, 4.0):
        out = tmp_path / f"g{burstiness}.json"
        assert main(["traces", "generate", "gamma", "--num-requests", "3000", "--rate", "20",
                     "--burstiness", str(burstiness), "--prompt-len", "64:512",
                     "--output-len", "16,32,64", "--out", str(out)]) == 0
        specs, _ = load(out, "workload-json")
        assert len(specs) == 3000 and specs[0].arrival_s == 0.0
        assert all(64 <= s.prompt_len <= 512 and s.output_len in (16, 32, 64) for s in specs)
        span = specs[-1].arrival_s
        assert 3000 / span == pytest.approx(20, rel=0.15)
        cvs[burstiness] = _gaps_cv(out)
    # A gamma gap's coefficient of variation is 1 / sqrt(shape): 2 for 0.25, 0.5 for 4.
    assert abs(cvs[0.25] - 2.0) < 0.3 and abs(cvs[4.0] - 0.5) < 0.1


def test_closed_loop_keeps_its_users_busy_and_refuses_a_rate(tmp_path, capsys):
    out = tmp_path / "c.json"
    assert main(["traces", "generate", "closed_loop", "--concurrency", "4", "--num-requests",
                 "40", "--out", str(out)]) == 0
    specs, _ = load(out, "workload-json")
    assert sum(s.arrival_s == 0.0 for s in specs) == 4  # one first request per user
    assert main(["traces", "generate", "closed_loop", "--rate", "3", "--out",
                 str(tmp_path / "x.json")]) == 2
    assert "closed_loop does not take --rate" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


def test_a_generated_workload_simulates(tmp_path, capsys):
    workload, config = tmp_path / "w.json", tmp_path / "c.json"
    assert main(["traces", "generate", "mixed_long", "--num-requests", "30", "--rate", "5",
                 "--long-fraction", "0.2", "--seed", "3", "--out", str(workload)]) == 0
    config.write_text(json.dumps({"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100",
                                  "max_model_len": 40000}))
    summary = tmp_path / "s.json"
    assert main(["sim", "--workload", str(workload), "--config", str(config),
                 "--summary", str(summary)]) == 0
    result = json.loads(summary.read_text())
    assert result["completed"] == 30 and result["failed"] == 0
