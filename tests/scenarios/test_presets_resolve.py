"""Presets resolve their configs as every door does (core/resolve.py): the CLI's --preset, the
page's preset menu and a session on a preset run the same config, and a variant's settings go
over the preset's before the resolution (so a variant naming another GPU gets its defaults)."""

from __future__ import annotations

import argparse
import json

import pytest

from servescope.cli._scenario import load_scenario
from servescope.core.resolve import resolve_config
from servescope.scenarios import presets
from servescope.scenarios.workloads import DEMO, list_presets, preset_workload

NAMES = [p["name"] for p in presets.list_presets()]


@pytest.mark.parametrize("name", NAMES)
def test_every_door_resolves_a_preset_alike(name: str) -> None:
    given = json.loads((presets.PRESET_DIR / f"{name}.json").read_text())["config"]
    expected = resolve_config(given).config
    assert presets.load_preset(name)[0] == expected
    assert next(p for p in list_presets() if p["name"] == name)["config"] == expected.to_dict()
    args = argparse.Namespace(preset=name, workload=None, config=None, set=[])
    assert load_scenario(args)[0] == expected
    assert resolve_config(preset_workload(name).base_config).config == expected


def test_a_variant_is_resolved_after_its_settings_apply(tmp_path) -> None:
    preset = {"config": {"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "L40S"},
              "workload": {"requests": [{"id": "a", "arrival_step": 0, "prompt_len": 8,
                                         "output_len": 2}]},
              "variants": [{"name": "h100", "set": {"gpu": "H100"}}]}
    (tmp_path / "p.json").write_text(json.dumps(preset))
    base = presets.load_preset("p", tmp_path)[0]
    [(_, variant)] = presets.variants("p", tmp_path)
    assert (base.max_num_batched_tokens, base.max_num_seqs) == (2048, 256)
    assert (variant.max_num_batched_tokens, variant.max_num_seqs) == (8192, 1024)


def test_the_demos_settings_stay_with_the_demo() -> None:
    demo = preset_workload("demo").base_config
    assert demo["max_num_seqs"] == DEMO["config"]["max_num_seqs"] == 32
    assert demo["max_num_batched_tokens"] == 512
