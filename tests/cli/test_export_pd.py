"""`servescope export` of a P/D config: the bench JSON keeps the P/D summary, and the
OpenMetrics file carries every engine of both pools with its `pool` and `replica` and the NIXL
connector metrics, whose totals agree with the run's kv_transfer; promtool backfills it."""

from __future__ import annotations

import json
import re
from pathlib import Path

from support.prometheus import backfill

from servescope.cli import main

SAMPLE = re.compile(r"(vllm:[a-z_:]+)\{.*\} (\S+) \S+$")
POOL, REPLICA = re.compile(r'pool="(\w+)"'), re.compile(r'replica="(\d+)"')
CONFIG = {"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100",
          "prefill": {"replicas": 1}, "decode": {"replicas": 2}}


def test_a_pd_configs_export_labels_both_pools_and_counts_its_transfers(
        tmp_path: Path) -> None:
    (tmp_path / "c.json").write_text(json.dumps(CONFIG))
    (tmp_path / "w.json").write_text(json.dumps([
        {"id": f"q{i}", "arrival_s": 0.03 * i, "prompt_len": 300 + 50 * i, "output_len": 6}
        for i in range(5)]))
    bench, metrics = tmp_path / "b.json", tmp_path / "m.om.txt"
    assert main(["export", "--workload", str(tmp_path / "w.json"), "--config",
                 str(tmp_path / "c.json"), "--bench", str(bench), "--openmetrics",
                 str(metrics), "--epoch", "1700000000"]) == 0
    summary = json.loads(bench.read_text())
    transfer = summary["kv_transfer"]
    assert summary["completed"] == 5 and transfer["transfers"] == 5
    # (sample, pool, replica) -> its last value; the file holds each series' samples in time
    # order, a histogram's whole at each time (prometheus-client's parser wants one time only)
    last: dict[tuple[str, str, str], float] = {}
    for line in metrics.read_text().splitlines():
        match = SAMPLE.match(line)
        if match and 'le="' not in line:
            pool, replica = POOL.search(line), REPLICA.search(line)
            assert pool and replica, line
            last[(match[1], pool[1], replica[1])] = float(match[2])
    engines = {(p, r) for _, p, r in last}
    assert engines == {("prefill", "0"), ("decode", "0"), ("decode", "1")}
    decode = [("decode", "0"), ("decode", "1")]
    assert sum(last[("vllm:nixl_xfer_time_seconds_count", *k)] for k in decode) == 5
    assert sum(last[("vllm:nixl_bytes_transferred_sum", *k)] for k in decode) == transfer["bytes"]
    assert last[("vllm:request_success_total", "prefill", "0")] == 0  # max_tokens 1: "length"
    assert backfill(metrics, tmp_path / "tsdb")
