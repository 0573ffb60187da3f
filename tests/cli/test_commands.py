"""The diagnose, import-vllm, exercise and export subcommands end to end on small inputs, and
the binding of every command module to its name, texts and run function."""

from __future__ import annotations

import json

import pytest
from support.bench_reader import read
from support.trace_events import validate

from servescope.cli import main


def test_diagnose_a_preset_prints_the_verdict_and_writes_json(tmp_path, capsys):
    out = tmp_path / "d.json"
    assert main(["diagnose", "--preset", "batch-slots", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("dominant: batch_slots")
    assert "--max-num-seqs" in text and "re-simulated" in text
    assert json.loads(out.read_text())["dominant"] == "batch_slots"


def test_diagnose_a_bench_result_says_what_is_missing(tmp_path, capsys):
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps({"completed": 100, "num_preemptions": 0, "median_ttft_ms": 80.0,
                                 "p99_ttft_ms": 95.0, "median_itl_ms": 12.0,
                                 "p99_itl_ms": 13.0}))
    assert main(["diagnose", "--bench", str(bench)]) == 0
    text = capsys.readouterr().out
    assert "missing per-step records" in text and "missing decode_floor_ms" in text


def test_import_vllm_round_trips_through_its_own_output(tmp_path, capsys):
    config_out = tmp_path / "config.json"
    line = ("vllm serve meta-llama/Llama-3.1-8B-Instruct --max-num-seqs 48 "
            "--max-num-batched-tokens 4096 --no-enable-prefix-caching --port 8000")
    args = ["import-vllm", "--gpu", "H100", "--config-out", str(config_out), "--"]
    assert main([*args, *line.split()]) == 0
    text = capsys.readouterr().out
    first = json.loads(config_out.read_text())
    assert (first["max_num_seqs"], first["max_num_batched_tokens"]) == (48, 4096)
    assert "--port (no_effect)" in text
    echoed = next(t for t in text.splitlines() if t.startswith("as vllm serve: "))
    again = tmp_path / "again.json"
    assert main(["import-vllm", "--gpu", "H100", "--config-out", str(again), "--",
                 echoed.removeprefix("as vllm serve: ")]) == 0
    assert json.loads(again.read_text()) == first


def test_import_vllm_bad_value_is_a_one_line_error(capsys):
    assert main(["import-vllm", "--", "vllm", "serve", "m", "--max-num-seqs", "many"]) == 2
    assert "--max-num-seqs" in capsys.readouterr().err


def test_exercise_budget_sweep_prints_the_saturation_point(capsys):
    assert main(["exercise", "budget-sweep", "--num-requests", "16", "--budgets",
                 "512,2048,8192"]) == 0
    text = capsys.readouterr().out
    assert "throughput saturates at max_num_batched_tokens" in text
    assert len([t for t in text.splitlines() if t.strip().startswith(("512", "2048", "8192"))]) == 3


def test_export_writes_files_the_readers_accept(tmp_path):
    bench, trace, csv_path = tmp_path / "b.json", tmp_path / "t.json", tmp_path / "r.csv"
    assert main(["export", "--preset", "decode-floor", "--bench", str(bench), "--perfetto",
                 str(trace), "--csv", str(csv_path)]) == 0
    assert read(bench)["completed"] == 12
    assert validate(json.loads(trace.read_text())) == []
    assert len(csv_path.read_text().splitlines()) == 13


def test_export_openmetrics_is_stamped_from_the_epoch_and_refuses_bad_options(tmp_path, capsys):
    out = tmp_path / "run.om.txt"
    assert main(["export", "--preset", "decode-floor", "--openmetrics", str(out), "--epoch",
                 "2026-01-01T00:00:00Z", "--interval-s", "0.25", "--label", "what-if"]) == 0
    text = out.read_text()
    assert text.endswith("# EOF\n")
    lines = [ln for ln in text.splitlines() if ln.startswith("vllm:num_requests_running{")]
    assert 'session="what-if"' in lines[0]
    stamps = [float(ln.rsplit(" ", 1)[1]) for ln in lines]
    assert stamps[:2] == [1767225600.0, 1767225600.25] and stamps == sorted(stamps)
    with pytest.raises(SystemExit):
        main(["export", "--preset", "decode-floor", "--openmetrics", str(out), "--epoch",
              "2026-01-01T00:00:00"])
    assert "needs a time zone" in capsys.readouterr().err
    assert main(["export", "--preset", "decode-floor", "--openmetrics", str(tmp_path / "x"),
                 "--interval-s", "0"]) == 2
    assert "--interval-s: interval_s must be > 0" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_every_command_module_is_bound_to_its_name_texts_and_run(capsys):
    from servescope.cli import COMMAND_MODULES, build_parser, import_vllm, sim

    parser = build_parser()
    assert parser.parse_args(["sim", "--workload", "w", "--config", "c"]).func is sim.run
    assert parser.parse_args(["import-vllm", "--", "vllm", "serve", "m"]).func is import_vllm.run
    with pytest.raises(SystemExit):
        parser.parse_args(["--help"])
    listing = capsys.readouterr().out
    assert all(name.replace("_", "-") in listing for name in COMMAND_MODULES)
    assert sim.HELP in listing
    with pytest.raises(SystemExit):
        parser.parse_args(["import-vllm", "--help"])
    assert "example: servescope import-vllm" in capsys.readouterr().out
