"""`servescope compare`: four modes, one cost model, table and JSON, one-line errors."""

from __future__ import annotations

import json

import pytest

from servescope.cli import main


def test_compare_json_has_four_modes_priced_alike(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "H100",
                 "--num-requests", "12", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    (setup,) = data["setups"]
    modes = [row["mode"] for row in setup["rows"]]
    assert modes == ["naive", "static", "continuous", "continuous+chunked"]
    rows = {row["mode"]: row for row in setup["rows"]}
    assert all(row["completed"] == 12 for row in rows.values())
    # Batching amortises the weight read: every batching mode beats one request at a time.
    assert min(rows[m]["output_throughput"] for m in modes[1:]) > rows["naive"]["output_throughput"]
    # Paged KV wastes at most a partial block per request; static padding wastes far more.
    assert rows["continuous+chunked"]["kv_waste_pct"] < 5 < rows["static"]["kv_waste_pct"]
    assert data["workload"]["prompt_lens"] == [128, 256, 512, 2048, 8192]


def test_compare_prints_a_table_for_both_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "--num-requests", "8"]) == 0
    out = capsys.readouterr().out
    assert "Llama-3.1-8B-Instruct on H100" in out
    assert "Llama-3.3-70B-Instruct fp8 on H200" in out
    assert out.count("continuous+chunked") == 2


def test_compare_refuses_a_model_that_does_not_fit(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "--model", "meta-llama/Llama-3.3-70B-Instruct", "--gpu", "H100",
                 "--num-requests", "4"]) == 2
    err = capsys.readouterr().err
    assert "does not fit" in err and "GiB" in err
