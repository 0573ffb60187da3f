"""A P/D fleet's pools as fleets (core/pd_fleet.py, core/pd_config.py): a failed load follows
the config's kv_load_failure_policy, a prefix router in a pool routes as in a plain fleet, and
each decode replica prices its handoff from its own model geometry."""

from __future__ import annotations

import numpy as np
import pytest
from support.factories import routed_of

from servescope.core.config_error import ConfigError
from servescope.core.fleet import Fleet
from servescope.core.pd_config import pd_fleet_from, pool_configs
from servescope.core.pd_events import PoolRouted
from servescope.core.prefix import BlockHasher
from servescope.core.request import RequestSpec
from servescope.core.routers.make import make_router
from servescope.traces.tenants import multi_tenant

PRICED = {"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100"}
SPECS = [RequestSpec("r0", 100, 3, arrival_s=0.0), RequestSpec("r1", 100, 3, arrival_s=0.01)]


def failed_run(policy: str | None) -> dict[str, object]:
    config = {**PRICED, **({} if policy is None else {"kv_load_failure_policy": policy})}
    fleet = pd_fleet_from(config, SPECS)
    fleet.fails = frozenset({"r1"})  # r1's load fails
    fleet.run_to_end()
    return fleet.summary()


def test_a_failed_load_fails_the_request_under_vllms_default_policy() -> None:
    # vllm/config/kv_transfer.py: kv_load_failure_policy "fail" by default; the scheduler
    # finishes the request FINISHED_ERROR (Scheduler.update_from_output)
    summary = failed_run(None)
    assert (summary["completed"], summary["failed"]) == (1, 1)
    assert summary["kv_transfer"]["failed"] == 1


def test_under_recompute_a_failed_load_prefills_on_the_decode_replica() -> None:
    # Scheduler._handle_failed_recving: num_computed_tokens back to 0, the request recomputed
    summary = failed_run("recompute")
    assert (summary["completed"], summary["failed"]) == (2, 0)


@pytest.mark.parametrize("bad", ["retry", 3, None, ["fail"]])
def test_a_bad_failure_policy_is_named(bad: object) -> None:
    with pytest.raises(ConfigError) as err:
        pd_fleet_from({**PRICED, "decode": {}, "kv_load_failure_policy": bad}, SPECS)
    assert err.value.field == "kv_load_failure_policy"


def test_the_failure_policy_is_no_engine_key() -> None:
    pools = pool_configs({**PRICED, "decode": {}, "kv_load_failure_policy": "recompute"})
    assert len(pools["decode"]) == 1  # resolved without an unknown-key error


def test_each_decode_replica_prices_its_handoff_from_its_own_geometry() -> None:
    # Llama-3.1-8B: 32 layers x 8 KV heads x 128 x 2 (K and V) = 65,536 elements a token;
    # bf16 KV (2 bytes) on replica 0, fp8 KV (1 byte) on replica 1; round-robin sends r0 to 0
    fleet = pd_fleet_from({**PRICED, "decode": {"replicas": 2, "router": "round-robin",
                                                "replica_configs": [
                                                    {}, {"kv_cache_dtype": "fp8"}]}}, SPECS)
    fleet.run_to_end()
    assert fleet.connectors[0].loads["r0"].num_bytes == 100 * 65_536 * 2
    assert fleet.connectors[1].loads["r1"].num_bytes == 100 * 65_536 * 1
    assert fleet.summary()["kv_transfer"]["bytes"] == 100 * 65_536 * 3


PREFIX_ONLY = {"scorers": {"prefix-cache-scorer": 1.0}, "lru_capacity_per_server": 4096}


def test_a_prefix_router_in_the_decode_pool_routes_as_in_a_plain_fleet(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # llm-d's approximate prefix-cache-scorer alone scores from the router's own index of what
    # it sent (core/routers/prefix_index.py ApproxIndex), never from replica state, so the
    # same arrivals get the same decisions whether the replicas prefill or only decode
    specs = multi_tenant(np.random.default_rng(5), 60, 20.0, num_tenants=4,
                         system_prompt_len=(256, 512), user_len=(16, 64),
                         output_len=(4, 16))
    config = {**PRICED, "enable_prefix_caching": True, "max_model_len": 8192}
    decode = {"replicas": 3, "router": "prefix-approx", "router_config": PREFIX_ONLY}
    given: list[str] = []
    give = BlockHasher.give
    monkeypatch.setattr(BlockHasher, "give", lambda self, request_id, hashes: (
        given.append(request_id), give(self, request_id, hashes)))
    pd = pd_fleet_from({**config, "decode": decode}, specs)
    routed = [(e.routed.request_id, e.routed.replica) for e in pd.run()
              if isinstance(e, PoolRouted) and e.pool == "decode"]
    given_in_pd = list(given)
    plain_configs = pool_configs({**config, "decode": decode})["decode"]
    plain = Fleet(plain_configs, specs, make_router("prefix-approx", 3, PREFIX_ONLY, 0, 16),
                  records=False)
    assert routed == [(r.request_id, r.replica) for r in routed_of(plain)]
    assert len({replica for _, replica in routed}) > 1  # the tenants spread
    # the router's prompt hashes reached the decode replicas' prefix caches (Fleet.route's
    # hasher.give), each taken by the request's first lookup there
    assert sorted(given_in_pd) == sorted(s.id for s in specs)
    assert all(h is not None and not h.given for h in pd.decode.hashers)
    assert pd.summary()["completed"] == len(specs)
