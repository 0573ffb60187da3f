"""Presets produce each verdict class; recommended knobs are checked by re-simulation."""

from __future__ import annotations

import pytest

from servescope.core.diagnose import VERDICTS
from servescope.core.engine import Engine
from servescope.diagnosis_check import diagnose_run
from servescope.presets import list_presets, load_preset

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
    assert first["expected"]["confirmed"]


def test_hardware_knobs_are_reported_unchecked_without_a_cost_model() -> None:
    config, specs, _ = load_preset("decode-floor")
    result = diagnose_run(config, specs)
    floor = result["verdicts"][0]
    assert floor["kind"] == "decode_floor"
    for rec in floor["recommendations"]:
        assert rec["expected"]["checked"] is False and rec["expected"]["reason"]
