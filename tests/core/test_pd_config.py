"""A P/D config read into its pools (core/pd_config.py): the top level is both pools' default,
each pool's own keys win, and every bad field is a ConfigError that names it."""

from __future__ import annotations

from typing import Any

import pytest

from servescope.core.config_error import ConfigError
from servescope.core.pd_config import is_pd, pd_fleet_from, pool_configs
from servescope.core.request import RequestSpec

PRICED = {"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100"}


def test_a_config_is_pd_iff_it_has_a_prefill_or_decode_key() -> None:
    assert is_pd({"decode": {}}) and is_pd({"prefill": {"replicas": 2}})
    assert not is_pd({"replicas": 2, "kv_link": {}})


def test_the_top_level_is_each_pools_default_and_the_pools_own_keys_win() -> None:
    pools = pool_configs({**PRICED, "max_num_seqs": 32,
                          "prefill": {"replicas": 2, "max_num_batched_tokens": 4096},
                          "decode": {"replicas": 3, "router": "least-requests"}})
    assert [len(pools["prefill"]), len(pools["decode"])] == [2, 3]
    assert {c.max_num_seqs for c in pools["prefill"] + pools["decode"]} == {32}
    assert pools["prefill"][0].max_num_batched_tokens == 4096
    assert pools["decode"][0].router == "least-requests"
    # the connector rules are the synchronous scheduler's: a pool left alone runs sync, where
    # a plain priced vllm-v1 config would default to async (core/resolve.py)
    assert not any(c.async_scheduling for c in pools["prefill"] + pools["decode"])


def test_a_pool_takes_mixed_replicas_as_a_fleet_does() -> None:
    pools = pool_configs({**PRICED, "decode": {"replicas": 2, "replica_configs": [
        {}, {"gpu": "H200", "tensor_parallel_size": 2}]}})
    assert [(c.gpu, c.tensor_parallel_size) for c in pools["decode"]] == [("H100", 1),
                                                                          ("H200", 2)]
    assert [c.gpu for c in pools["prefill"]] == ["H100"]


BAD: list[tuple[dict[str, Any], str]] = [
    ({"prefill": {"replicas": 0}}, "prefill.replicas"),
    ({"decode": {"tensor_parallel_size": "two"}}, "decode.tensor_parallel_size"),
    ({"decode": {"router": "nope"}}, "decode.router"),
    ({"prefill": {"async_scheduling": True}}, "prefill.async_scheduling"),
    ({"decode": {"policy": "static"}}, "decode.policy"),
    ({"prefill": {"data_parallel_size": 2}}, "prefill.data_parallel_size"),
    ({"prefill": [1]}, "prefill"),
    ({"decode": {}, "kv_link": {"gbps": -1}}, "kv_link.gbps"),
    ({"decode": {}, "kv_link": {"kind": "carrier-pigeon"}}, "kv_link.kind"),
    ({"decode": {}, "kv_link": ["nvlink"]}, "kv_link"),
    ({"decode": {}, "pd_threshold": -3}, "pd_threshold"),
    ({"decode": {}, "pd_threshold": True}, "pd_threshold"),
]


@pytest.mark.parametrize(("config", "field"), BAD)
def test_each_bad_field_is_named(config: dict[str, Any], field: str) -> None:
    specs = [RequestSpec("r0", 16, 2, arrival_s=0.0)]
    with pytest.raises(ConfigError) as err:
        pd_fleet_from({**PRICED, **config}, specs)
    assert err.value.field == field


def test_an_unpriced_decode_pool_is_refused_naming_its_model() -> None:
    # the handoff's bytes come from the model's geometry (core/kv_link.py kv_bytes)
    with pytest.raises(ConfigError) as err:
        pd_fleet_from({"num_gpu_blocks": 64, "decode": {}},
                      [RequestSpec("r0", 16, 2, arrival_s=0.0)])
    assert err.value.field == "decode.model"


def test_the_fleet_a_config_describes_runs_its_pools_and_link() -> None:
    specs = [RequestSpec(f"r{i}", 300, 4, arrival_s=0.01 * i) for i in range(4)]
    fleet = pd_fleet_from({**PRICED, "prefill": {"replicas": 1},
                           "decode": {"replicas": 2, "router": "least-requests"},
                           "kv_link": {"kind": "pcie", "latency_ms": 0.5}}, specs)
    fleet.run_to_end()
    summary = fleet.summary()
    assert summary["completed"] == 4 and summary["kv_transfer"]["transfers"] == 4
    assert summary["pools"]["decode"]["router"]["name"] == "least-requests"
    assert len(summary["pools"]["decode"]["replicas"]) == 2
    link = fleet.connectors[0].links[0].spec
    assert (link.kind, link.gbps, link.latency_ms) == ("pcie", 64.0, 0.5)
    assert set(summary["ttft_parts"]) == {s.id for s in specs}
