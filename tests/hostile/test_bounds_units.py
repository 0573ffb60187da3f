"""The bounds themselves, module by module, on hand-made cases: a YAML alias or too many
nodes refused while parsing, a user value shown within a kilobyte, a load profile counted
(in a window) before anything is generated, a grid's lists counted before any value is
checked, and a pool refused by its own constructor."""

from __future__ import annotations

import time

import pytest

from servescope.core.block_pool import MAX_NUM_GPU_BLOCKS, BlockPool
from servescope.sweep.grid import MAX_VALUES_PER_KEY, GridError, check_grid
from servescope.traces import _yaml, inference_perf
from servescope.traces.errors import TooManyRequests, TraceFormatError, shown

pytestmark = pytest.mark.hostile


def test_a_yaml_alias_is_refused_naming_its_line(tmp_path):
    path = tmp_path / "a.yaml"
    path.write_text("a: &x [1, 2]\nb: *x\n")
    with pytest.raises(TraceFormatError, match="aliases") as err:
        _yaml.load_mapping(path, "not a mapping")
    assert err.value.line == 2
    path.write_text("a: 1\nb: [1, 2]\n")  # anchors aside, plain YAML reads as PyYAML's would
    assert _yaml.load_mapping(path, "not a mapping") == {"a": 1, "b": [1, 2]}


def test_yaml_past_the_node_cap_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(_yaml, "MAX_YAML_NODES", 10)
    path = tmp_path / "n.yaml"
    path.write_text("a: [" + ", ".join(["1"] * 20) + "]\n")
    with pytest.raises(TraceFormatError, match="more than 10 YAML nodes"):
        _yaml.load_mapping(path, "not a mapping")


def test_a_value_of_shared_leaves_is_shown_within_a_kilobyte_at_once():
    value: object = ["lol"] * 10
    for _ in range(9):  # 10^10 leaves, shared
        value = [value] * 10
    start = time.process_time()
    text = shown(value)
    assert len(text) < 1024 and time.process_time() - start < 0.1
    assert len(shown("x" * 10**6)) < 100 and len(shown(10**4000)) < 100


def config(*stages: tuple[float, float]) -> dict:
    return {"load": {"stages": [{"rate": r, "duration": d} for r, d in stages]}}


def test_a_profile_is_counted_from_its_stages_with_the_window_that_fits():
    # 10 req/s for 100 s (1,000), then 100 req/s for 100 s (10,000): 11,000 in all
    profile = config((10, 100), (100, 100))
    inference_perf.check_count(profile, 11_000)  # exactly the cap: fits
    with pytest.raises(TooManyRequests) as err:
        inference_perf.check_count(profile, 5_000)
    # the first 1,000 by 100 s; the second stage starts load.interval (1 s by default) + 1 s
    # after the first (inference-perf's loadgen), and its next 4,000 at 100 req/s take 40 s
    assert err.value.num_requests == 11_000 and err.value.fits_end_s == pytest.approx(142)
    inference_perf.check_count(profile, 5_000, (100.0, 142.0))  # 4,000 in that window
    with pytest.raises(TooManyRequests):
        inference_perf.check_count(profile, 5_000, (50.0, None))  # 500 + 10,000


def test_a_grid_is_refused_by_its_list_lengths_before_any_value_is_checked():
    base = {"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100"}
    # values that would each be refused: the length is named first
    with pytest.raises(GridError, match=f"more than the {MAX_VALUES_PER_KEY}") as err:
        check_grid(base, {"max_num_seqs": ["bad"] * (MAX_VALUES_PER_KEY + 1)})
    assert err.value.field == "max_num_seqs"
    with pytest.raises(GridError, match="points") as err:
        check_grid(base, {"max_num_seqs": ["bad"] * 200, "block_size": ["bad"] * 200})
    assert err.value.field == "grid"


def test_the_pool_refuses_more_blocks_than_the_core_builds():
    with pytest.raises(ValueError, match="MAX_NUM_GPU_BLOCKS"):
        BlockPool(MAX_NUM_GPU_BLOCKS + 1, enable_caching=True)
    assert BlockPool(16, enable_caching=True).num_usable_blocks == 15
