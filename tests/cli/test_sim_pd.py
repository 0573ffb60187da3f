"""`servescope sim` for a P/D fleet: flags over a plain config, a config with pools, and a
bad field refused in one line that names it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PRICED = {"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100"}


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "servescope.cli", *args],
                          capture_output=True, text=True, timeout=120)


def _workload(tmp_path: Path, n: int = 6) -> Path:
    path = tmp_path / "w.json"
    path.write_text(json.dumps([{"id": f"q{i}", "arrival_s": 0.02 * i, "prompt_len": 400,
                                 "output_len": 8} for i in range(n)]))
    return path


def test_the_replica_flags_split_a_plain_config_into_pools(tmp_path: Path) -> None:
    (tmp_path / "c.json").write_text(json.dumps(PRICED))
    done = _run("sim", "--workload", str(_workload(tmp_path)), "--config",
                str(tmp_path / "c.json"), "--prefill-replicas", "1", "--decode-replicas", "2",
                "--kv-link", "nvlink")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["completed"] == 6
    assert [len(summary["pools"][p]["replicas"]) for p in ("prefill", "decode")] == [1, 2]
    assert summary["kv_transfer"]["transfers"] == 6
    # 400 tokens of Llama-3.1-8B's KV: 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes
    assert summary["kv_transfer"]["bytes"] == 6 * 400 * 32 * 8 * 128 * 2 * 2
    assert set(summary["ttft_parts"]["q0"]) == {"prefill_queue_ms", "prefill_ms",
                                                "transfer_ms", "first_decode_ms"}


def test_a_config_with_pools_and_a_bad_field(tmp_path: Path) -> None:
    config = {**PRICED, "prefill": {"replicas": 2}, "decode": {"replicas": 1},
              "kv_link": {"kind": "roce"}}
    (tmp_path / "c.json").write_text(json.dumps(config))
    summary_path, out = tmp_path / "s.json", tmp_path / "r.jsonl"
    done = _run("sim", "--workload", str(_workload(tmp_path)), "--config",
                str(tmp_path / "c.json"), "--summary", str(summary_path), "--out", str(out))
    assert done.returncode == 0, done.stderr
    steps = [json.loads(line) for line in out.read_text().splitlines()[1:]]
    # the one decode replica's records: every request waits for its KV, then finishes there
    assert {i for s in steps for i in s.get("waiting_for_kv", [])} == {f"q{i}" for i in range(6)}
    assert sorted(i for s in steps for i in s["finished"]) == [f"q{i}" for i in range(6)]
    assert json.loads(summary_path.read_text())["pools"]["prefill"]["router"]["decisions"] == 6
    (tmp_path / "c.json").write_text(json.dumps({**config, "kv_link": {"gbps": 0}}))
    done = _run("sim", "--workload", str(_workload(tmp_path)), "--config",
                str(tmp_path / "c.json"))
    assert done.returncode != 0
    assert "kv_link.gbps" in done.stderr and "Traceback" not in done.stderr
