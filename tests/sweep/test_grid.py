"""Grid checks happen before anything runs and name the key; points expand in grid order."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from servescope.core.config import EngineConfig
from servescope.sweep.grid import GRID_KEYS, GridError, expand, read_grid


def test_expand_is_the_cartesian_product_in_grid_order(base: dict[str, Any]) -> None:
    points = expand(base, {"gpu": ["H100", "A100-80GB"], "max_num_seqs": [8, 64],
                           "replicas": [1, 3]})
    assert len(points) == 8
    assert [p.index for p in points] == list(range(8))
    assert points[0].values == {"gpu": "H100", "max_num_seqs": 8, "replicas": 1}
    assert points[1].values == {"gpu": "H100", "max_num_seqs": 8, "replicas": 3}
    assert points[7].config.gpu == "A100-80GB" and points[7].config.max_num_seqs == 64
    assert points[1].replicas == 3 and points[1].config.model == base["model"]


@pytest.mark.parametrize(("grid", "field", "words"), [
    ({"max_num_sequences": [8]}, "max_num_sequences", "unknown grid key"),
    ({"num_gpu_blocks": [100]}, "num_gpu_blocks", "unknown grid key"),
    ({"max_num_seqs": [8, 0]}, "max_num_seqs", "at least 1"),
    ({"gpu_memory_utilization": [0.9, 1.5]}, "gpu_memory_utilization", "(0, 1]"),
    ({"block_size": [24]}, "block_size", "power of two"),
    ({"policy": ["vllm-v1", "fastest"]}, "policy", "must be one of"),
    ({"quantization": ["awq"]}, "quantization", "must be one of"),
    ({"gpu": ["H100", "TPU-v5"]}, "gpu", "unknown GPU"),
    ({"tensor_parallel_size": [1, 3]}, "tensor_parallel_size", "does not divide"),
    ({"replicas": [0]}, "replicas", "integer in"),
    ({"replicas": [1.5]}, "replicas", "integer in"),
    ({"enable_prefix_caching": ["yes"]}, "enable_prefix_caching", "expected bool"),
    ({"max_num_seqs": 8}, "max_num_seqs", "non-empty list"),
    ({"max_num_seqs": []}, "max_num_seqs", "non-empty list"),
    ({"router": ["round-robin", "nearest"]}, "router", "must be one of"),
    ({"router": [3]}, "router", "expected str"),
    ({"router_config": ["fast"]}, "router_config", "expected dict"),
    ({"replicas": [1, 1025]}, "replicas", "integer in [1, 1024]"),
])
def test_bad_grids_are_refused_naming_the_key(base: dict[str, Any], grid: dict[str, object],
                                               field: str, words: str) -> None:
    with pytest.raises(GridError) as err:
        expand(base, grid)
    assert err.value.field == field
    assert field in str(err.value) and words in str(err.value)


def test_async_scheduling_is_swept_only_where_the_engine_config_has_it(
        base: dict[str, Any]) -> None:
    fields = {f.name for f in dataclasses.fields(EngineConfig)}
    assert "async_scheduling" in GRID_KEYS
    if "async_scheduling" in fields:
        assert [p.config.async_scheduling for p in
                expand(base, {"async_scheduling": [False, True]})] == [False, True]
        with pytest.raises(GridError) as err:  # a combination the engine config refuses
            expand(base, {"policy": ["vllm-v0"], "async_scheduling": [True]})
        assert err.value.field == "async_scheduling" and "point 0" in str(err.value)
    else:
        with pytest.raises(GridError, match="async_scheduling: this build's engine config"):
            expand(base, {"async_scheduling": [False, True]})


def test_the_base_config_must_name_a_model() -> None:
    with pytest.raises(GridError) as err:
        expand({"gpu": "H100"}, {"max_num_seqs": [8]})
    assert err.value.field == "model"


def test_grid_files_read_as_json_or_yaml(tmp_path: Path) -> None:
    (tmp_path / "g.yaml").write_text("max_num_seqs: [8, 16]\ngpu:\n  - H100\n")
    (tmp_path / "g.json").write_text(json.dumps({"max_num_seqs": [8, 16], "gpu": ["H100"]}))
    assert read_grid(tmp_path / "g.yaml") == read_grid(tmp_path / "g.json")
    (tmp_path / "bad.json").write_text('{"max_num_seqs": [8,')
    with pytest.raises(GridError, match="line 1"):
        read_grid(tmp_path / "bad.json")
    (tmp_path / "list.yaml").write_text("- 8\n- 16\n")
    with pytest.raises(GridError, match="maps config keys"):
        read_grid(tmp_path / "list.yaml")


@pytest.mark.parametrize(("grid", "field", "words"), [
    # round-robin reads no settings (core/routers/base.py: a key outside Router.settings)
    ({"router": ["round-robin"], "router_config": [{"scorers": {"queue-scorer": 1}}]},
     "router_config", "not a setting of the round-robin router"),
    ({"router": ["llm-d"], "router_config": [{"scorers": {"no-such-scorer": 1}}]},
     "router_config.scorers", "not a scorer"),
    ({"router": ["llm-d"], "router_config": [{"kv_event_delay_ms": -5}]},
     "router_config.kv_event_delay_ms", ">= 0"),
])
def test_a_router_config_its_router_does_not_take_is_refused_before_any_point_runs(
        base: dict[str, Any], grid: dict[str, object], field: str, words: str) -> None:
    with pytest.raises(GridError) as err:
        expand(base, grid)
    assert err.value.field == field and words in str(err.value)
    assert "point 0" in str(err.value)


def test_router_config_values_reach_each_points_config(base: dict[str, Any]) -> None:
    profiles = [{"scorers": {"queue-scorer": 1}}, {"scorers": {"prefix-cache-scorer": 2}}]
    points = expand({**base, "router": "llm-d"}, {"router_config": profiles})
    assert [p.config.router_config for p in points] == profiles
    assert all(p.config.router == "llm-d" and p.replicas == 1 for p in points)


@pytest.mark.parametrize(("extra", "field"), [
    ({"replicas": 0}, "replicas"),
    ({"replicas": 2, "replica_configs": [{"max_num_seqs": 8}, {"max_num_seqs": 16}]},
     "replica_configs"),
    ({"router": "nearest"}, "router"),
])
def test_the_base_configs_fleet_keys_are_checked(base: dict[str, Any], extra: dict[str, Any],
                                                 field: str) -> None:
    with pytest.raises(GridError) as err:
        expand({**base, **extra}, {"max_num_seqs": [8]})
    assert err.value.field == field
