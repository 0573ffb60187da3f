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


def test_a_data_parallel_summary_without_records_is_the_recorded_runs(tmp_path: Path) -> None:
    """Without --out every rank is simulated unrecorded (core/kv_counting.py); with it rank 0
    makes the records: the same summary either way."""
    workload = [{"id": f"q{i}", "arrival_s": 0.01 * i, "prompt_len": 30 + 11 * (i % 9),
                 "output_len": 8 + 3 * (i % 7)} for i in range(40)]
    (tmp_path / "w.json").write_text(json.dumps(workload))
    (tmp_path / "c.json").write_text(json.dumps({"block_size": 8, "num_gpu_blocks": 48,
                                                 "data_parallel_size": 2}))
    common = ("sim", "--workload", str(tmp_path / "w.json"), "--config", str(tmp_path / "c.json"))
    counted = _run(*common, "--summary", str(tmp_path / "a.json"))
    recorded = _run(*common, "--out", str(tmp_path / "r.jsonl"), "--summary",
                    str(tmp_path / "b.json"))
    assert counted.returncode == recorded.returncode == 0, counted.stderr + recorded.stderr
    summary = json.loads((tmp_path / "a.json").read_text())
    assert summary["completed"] == 40 and summary["data_parallel_size"] == 2
    assert summary["num_preemptions"] > 0  # the small pool hands the run over (kv_counting)
    assert summary == json.loads((tmp_path / "b.json").read_text())


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


def _sim_files(tmp_path: Path) -> list[str]:
    workload = [{"id": f"q{i}", "arrival_step": 2 * i, "prompt_len": 30, "output_len": 40}
                for i in range(12)]
    (tmp_path / "w.json").write_text(json.dumps(workload))
    (tmp_path / "c.json").write_text(json.dumps({"block_size": 8, "num_gpu_blocks": 128}))
    return ["sim", "--workload", str(tmp_path / "w.json"), "--config", str(tmp_path / "c.json"),
            "--summary", str(tmp_path / "s.json")]


def test_sim_draws_a_progress_bar_on_a_terminal_only(tmp_path: Path) -> None:
    import os
    import pty
    import termios

    args = _sim_files(tmp_path)
    piped = _run(*args).stderr.splitlines()  # a pipe: no bar, only the config it ran
    assert piped and all(line.startswith(("note: ", "effective config: ")) for line in piped)
    master, slave = pty.openpty()
    termios.tcsetwinsize(slave, (24, 100))  # a terminal 100 columns wide
    try:
        done = subprocess.run([sys.executable, "-m", "servescope.cli", *args],
                              stdout=subprocess.PIPE, stderr=slave, timeout=120)
        os.close(slave)
        drawn = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the terminal's other end is closed: all read
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        os.close(master)
    assert done.returncode == 0
    assert b"simulating" in drawn and b"12/12" in drawn


def test_sim_prices_a_vllm_style_config_and_says_what_is_not_modelled(tmp_path: Path) -> None:
    workload = [{"id": f"q{i}", "arrival_s": 0.05 * i, "prompt_len": 300, "output_len": 20}
                for i in range(8)]
    (tmp_path / "w.json").write_text(json.dumps(workload))
    (tmp_path / "c.json").write_text(json.dumps({
        "model": "Qwen/Qwen2.5-7B-Instruct", "gpu": "NVIDIA H100 80GB HBM3",
        "tensor_parallel_size": 1, "quantization": None, "max_model_len": 4096,
        "kv_offloading_size": 8, "seed": 0}))
    summary = tmp_path / "s.json"
    done = _run("sim", "--workload", str(tmp_path / "w.json"), "--config",
                str(tmp_path / "c.json"), "--summary", str(summary))
    assert done.returncode == 0, done.stderr
    assert "kv_offloading_size=8 is not modelled" in done.stderr
    result = json.loads(summary.read_text())
    assert result["completed"] == 8 and result["total_output_tokens"] == 160
    for metric in ("ttft", "e2el", "tpot", "itl"):
        assert result[f"mean_{metric}_ms"] > 0
        assert result[f"mean_{metric}_ms"] <= result[f"p99_{metric}_ms"] * 1.0001
        assert result[f"p90_{metric}_ms"] <= result[f"p99_{metric}_ms"]
    assert result["not_modelled"][0].startswith("kv_offloading_size")


def test_sim_names_what_a_model_config_lacks_and_lists_known_gpus(tmp_path: Path) -> None:
    (tmp_path / "w.json").write_text("[]")
    (tmp_path / "hf.json").write_text(json.dumps({"hidden_size": 1024, "vocab_size": 32000,
                                                  "num_attention_heads": 16}))
    (tmp_path / "c.json").write_text(json.dumps({"gpu": "H100", "max_model_len": 2048}))
    done = _run("sim", "--workload", str(tmp_path / "w.json"), "--config",
                str(tmp_path / "c.json"), "--model-config", str(tmp_path / "hf.json"))
    assert done.returncode == 2
    assert "num_hidden_layers" in done.stderr and "intermediate_size" in done.stderr
    (tmp_path / "c.json").write_text(json.dumps({"model": "Qwen/Qwen3-8B", "gpu": "TPU v5e"}))
    done = _run("sim", "--workload", str(tmp_path / "w.json"), "--config",
                str(tmp_path / "c.json"))
    assert done.returncode == 2
    assert "RTX4090" in done.stderr and "H100" in done.stderr and "Traceback" not in done.stderr


PROFILE = """\
load:
  type: constant
  stages:
  - {rate: 4, duration: 3}
  - {rate: 8, duration: 2}
data:
  type: shared_prefix
  shared_prefix: {num_groups: 2, num_prompts_per_group: 3, system_prompt_len: 100,
                  question_len: 200, output_len: 30}
"""


def test_sim_runs_an_inference_perf_profile_with_a_hugging_face_config(tmp_path: Path) -> None:
    """The acceptance interface: sim --trace PROFILE.yaml --format inference-perf --config
    C.json --summary S.json, the measured report beside the profile carried along."""
    (tmp_path / "profile.yaml").write_text(PROFILE)
    (tmp_path / "summary_lifecycle_metrics.json").write_text(json.dumps(
        {"successes": {"count": 28, "latency": {"request_latency": {"mean": 0.5, "p90": 0.6}}}}))
    (tmp_path / "c.json").write_text(json.dumps({
        "model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100", "tensor_parallel_size": 1,
        "quantization": "fp8", "max_model_len": 4096, "max_num_seqs": 64,
        "enable_prefix_caching": True}))
    summary = tmp_path / "s.json"
    done = _run("sim", "--trace", str(tmp_path / "profile.yaml"), "--format", "inference-perf",
                "--config", str(tmp_path / "c.json"), "--summary", str(summary))
    assert done.returncode == 0, done.stderr
    result = json.loads(summary.read_text())
    assert result["completed"] == 4 * 3 + 8 * 2
    assert result["total_output_tokens"] == 28 * 30
    for metric in ("ttft", "e2el", "tpot", "itl"):
        assert 0 < result[f"mean_{metric}_ms"] and result[f"p90_{metric}_ms"] > 0
    assert result["mean_ttft_ms"] < result["mean_e2el_ms"]
    assert result["measured"]["mean_e2el_ms"] == 500.0 and result["measured"]["completed"] == 28
    bad = tmp_path / "bad.yaml"
    bad.write_text(PROFILE.replace("shared_prefix\n", "shareGPT\n", 1))
    done = _run("sim", "--trace", str(bad), "--format", "inference-perf", "--config",
                str(tmp_path / "c.json"))
    assert done.returncode == 2 and "shareGPT" in done.stderr and "Traceback" not in done.stderr
