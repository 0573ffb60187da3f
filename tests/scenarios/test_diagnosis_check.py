"""Presets produce each verdict class; recommended knobs are checked by re-simulation."""

from __future__ import annotations

import pytest

from servescope.core.diagnose import VERDICTS
from servescope.core.engine import Engine
from servescope.scenarios.diagnosis_check import (
    check_recommendation,
    diagnose_records,
    diagnose_run,
)
from servescope.scenarios.presets import list_presets, load_preset, variants

PRESETS = [p for p in list_presets() if p["verdict"]]


def test_every_verdict_class_has_a_preset() -> None:
    assert {p["verdict"] for p in PRESETS} == set(VERDICTS)


@pytest.mark.parametrize("name", [p["name"] for p in PRESETS])
def test_preset_produces_its_verdict(name: str) -> None:
    config, specs, meta = load_preset(name)
    result = diagnose_run(config, specs, check=False)
    assert result["dominant"] == meta["verdict"], [
        (v["kind"], v["score"]) for v in result["verdicts"]]
    top = result["verdicts"][0]
    assert top["evidence"] and top["recommendations"] and top["measure_next"]
    assert all(r["flag"].startswith("--") for r in top["recommendations"])


def test_kv_starvation_knobs_are_checked_against_an_independent_rerun() -> None:
    config, specs, _ = load_preset("kv-starvation")
    result = diagnose_run(config, specs)
    kv = result["verdicts"][0]
    first = kv["recommendations"][0]
    assert first["flag"] == "--kv-cache-dtype" and first["expected"]["checked"]
    # The re-run by hand: twice the usable blocks (FP8 KV halves bytes per token).
    engine = Engine(config.replace(num_gpu_blocks=2 * (config.num_gpu_blocks - 1) + 1), specs)
    list(engine.run())
    after = first["expected"]["metrics"]["num_preemptions"]
    assert after["after"] == engine.summary()["num_preemptions"]
    assert after["before"] == result["summary"]["num_preemptions"] > after["after"]
    assert first["expected"]["outcome"] in ("confirmed", "trade_off")


def test_hardware_knobs_are_reported_unchecked_without_a_cost_model() -> None:
    config, specs, _ = load_preset("kv-starvation")
    assert config.model is None  # priced by the placeholder
    result = diagnose_run(config, specs, check=False)
    memory = next(v for v in result["verdicts"] if v["kind"] == "memory_fit")
    tp = next(r for r in memory["recommendations"] if r["flag"] == "--tensor-parallel-size")
    expected = check_recommendation(tp, config, specs, result["summary"], None, derived=False)
    assert expected["checked"] is False and "model" in expected["reason"]


def test_decode_floor_knobs_are_checked_by_the_cost_model() -> None:
    config, specs, _ = load_preset("decode-floor")
    result = diagnose_run(config, specs)
    floor = result["verdicts"][0]
    fp8 = next(r for r in floor["recommendations"] if r["flag"] == "--quantization")
    itl = fp8["expected"]["metrics"]["median_itl_ms"]
    # FP8 weights halve the bytes a decode step reads: well below the BF16 ITL.
    assert fp8["expected"]["outcome"] == "confirmed" and itl["after"] < 0.8 * itl["before"]
    # EAGLE-3 at K = 3 on a memory-bound batch: about 2.7 tokens a verify for little more than
    # one step's weight read (tests/core/test_drafter_cost.py), so ITL falls well below
    spec = next(r for r in floor["recommendations"] if r["flag"] == "--speculative-config")
    itl = spec["expected"]["metrics"]["median_itl_ms"]
    assert spec["expected"]["checked"] and itl["after"] < 0.8 * itl["before"]


def test_speculation_that_costs_more_than_it_yields_is_turned_off_and_checked() -> None:
    """A big compute-bound batch (about 250 decoding) with 30% acceptance: the verify costs
    over twice a plain step for well under two tokens; the re-run without speculation is
    faster."""
    config, specs, _ = load_preset("speculation-off")
    result = diagnose_run(config, specs)
    top = result["verdicts"][0]
    assert top["kind"] == "speculation"
    evidence = {e["name"]: e["value"] for e in top["evidence"]}
    assert evidence["verify_cost_ratio"] > 2 and evidence["estimated_speedup"] < 1
    off = top["recommendations"][0]
    assert off["change"] == {"speculative_config": None}
    throughput = off["expected"]["metrics"]["output_throughput"]
    assert off["expected"]["outcome"] == "confirmed" and throughput["after"] > throughput["before"]


def test_memory_fit_reports_the_cost_model_memory_split() -> None:
    config, specs, _ = load_preset("memory-fit")
    result = diagnose_run(config, specs, check=False)
    memory = result["verdicts"][0]
    evidence = {e["name"]: e["value"] for e in memory["evidence"]}
    # 70B in FP8: about 70.6e9 parameters at one byte each, over 60 GiB of weights per GPU.
    assert evidence["weights_gib"] > 60
    assert evidence["kv_fit_requests"] < 4
    assert "--max-num-batched-tokens" in [r["flag"] for r in memory["recommendations"]]


def test_exercise_presets_list_variants_that_are_valid_configs() -> None:
    exercises = [p for p in list_presets() if p["variants"]]
    assert {p["name"] for p in exercises} >= {"lesson-static-vs-continuous",
                                              "lesson-budget-sweep", "lesson-fragmentation"}
    runs = variants("lesson-static-vs-continuous")
    assert [c.policy for _, c in runs] == ["naive", "static", "vllm-v0", "vllm-v1"]
    config, specs, _ = load_preset("lesson-static-vs-continuous")
    assert {s.prompt_len for s in specs} <= {128, 256, 512, 2048, 8192} and len(specs) == 60
    assert [c.allocator for _, c in variants("lesson-fragmentation")] == ["max", "paged"]


def test_diagnose_records_of_a_run_already_made() -> None:
    config, specs, _ = load_preset("batch-slots")
    engine = Engine(config, specs)
    records = list(engine.run())
    result = diagnose_records(config, specs, records, engine.summary())
    assert result["dominant"] == "batch_slots"
    assert result["verdicts"][0]["recommendations"][0]["expected"]["outcome"] == "confirmed"
