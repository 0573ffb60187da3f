"""The speculation lesson's presets say what their runs give: at light load (a few decodes, the
step memory-bound) EAGLE-3 drafts about halve the mean ITL; at high load (hundreds of decodes,
compute-bound) speculation gains far less, and K = 5 less than K = 3."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from servescope.core.engine import Engine
from servescope.scenarios import presets

LIGHT, HEAVY = "lesson-speculation-light", "lesson-speculation-heavy"


@cache
def summaries(name: str) -> dict[str, dict[str, Any]]:
    """Each variant's summary, the requests the preset draws, as the explorer runs them."""
    _, specs, _ = presets.load_preset(name)
    out = {}
    for variant, config in presets.variants(name):
        engine = Engine(config, specs, records=False)
        engine.run_to_end()
        out[variant] = engine.summary()
    return out


def itl_gain(name: str, variant: str) -> float:
    """Mean ITL without speculation over the variant's (above 1: speculation pays)."""
    runs = summaries(name)
    return runs["K=0"]["mean_itl_ms"] / runs[variant]["mean_itl_ms"]


def test_the_lessons_compare_k_0_3_5_scheduled_synchronously() -> None:
    for name in (LIGHT, HEAVY):
        runs = presets.variants(name)
        assert [v for v, _ in runs] == ["K=0", "K=3", "K=5"]
        assert [c.speculative and c.speculative.num_speculative_tokens for _, c in runs] == [
            None, 3, 5]
        assert not any(c.async_scheduling for _, c in runs)  # see spec-clock's async note


@pytest.mark.parametrize("variant", ["K=3", "K=5"])
def test_light_load_speculation_about_halves_the_itl(variant: str) -> None:
    assert 1.7 < itl_gain(LIGHT, variant) < 2.8
    assert summaries(LIGHT)[variant]["acceptance_source"].startswith("model: eagle3")


def test_high_load_speculation_gains_far_less_and_more_drafts_gain_less() -> None:
    for variant in ("K=3", "K=5"):
        assert itl_gain(HEAVY, variant) < 0.75 * itl_gain(LIGHT, variant)
    heavy = summaries(HEAVY)
    assert itl_gain(HEAVY, "K=5") < itl_gain(HEAVY, "K=3")
    assert heavy["K=5"]["output_throughput"] < heavy["K=3"]["output_throughput"]
