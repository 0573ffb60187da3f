"""`servescope export` of a speculating run: the CSV and bench JSON carry each request's draft
tokens, accepted drafts and acceptance rate, and they sum to the run's own counters."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from servescope.cli import main

CONFIG = {"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100",
          "speculative_config": {"method": "eagle3", "num_speculative_tokens": 3}}


def test_export_carries_per_request_acceptance_summing_to_the_summary(tmp_path: Path) -> None:
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps([{"id": f"r{k}", "arrival_s": k * 0.05,
                                     "prompt_len": 40 + k, "output_len": 20 + 3 * k}
                                    for k in range(12)]))
    config = tmp_path / "c.json"
    config.write_text(json.dumps(CONFIG))
    bench, table = tmp_path / "b.json", tmp_path / "r.csv"
    assert main(["export", "--workload", str(workload), "--config", str(config),
                 "--bench", str(bench), "--csv", str(table)]) == 0
    result = json.loads(bench.read_text())
    rows = list(csv.DictReader(table.open()))
    drafts = [int(r["drafts"]) for r in rows]
    accepted = [int(r["accepted"]) for r in rows]
    assert sum(drafts) == result["num_draft_tokens"] > 0
    assert sum(accepted) == result["num_accepted_tokens"] > 0
    assert sum(result["servescope"]["drafts"]) == result["num_draft_tokens"]
    for row, d, a in zip(rows, drafts, accepted, strict=True):
        assert 0 <= a <= d and abs(float(row["acceptance_rate"]) - a / d) < 1e-5
