"""A P/D config read into its pools: `prefill` and `decode` (each engine-config overrides with
its own `replicas`, `router`, `router_config` and, for mixed replicas, `replica_configs`, as a
fleet's config has them), `kv_link`, `pd_threshold` and `kv_load_failure_policy`; every other
top-level key is both pools' default. A bad field raises ConfigError named as the config spells it
("prefill.replicas", "decode.tensor_parallel_size", "kv_link.gbps").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from servescope.core.config import EngineConfig
from servescope.core.config_error import ConfigError
from servescope.core.kv_connector import FAILURE_POLICIES
from servescope.core.kv_link import LinkSpec
from servescope.core.pd_fleet import PDFleet, check_pool
from servescope.core.request import RequestSpec
from servescope.core.resolve import resolve_fleet
from servescope.core.routers.base import Router
from servescope.core.routers.make import make_router

POOLS = ("prefill", "decode")
PD_KEYS = (*POOLS, "kv_link", "pd_threshold", "kv_load_failure_policy")
# vLLM 0.33's KVTransferConfig.kv_load_failure_policy default (vllm/config/kv_transfer.py)
DEFAULT_FAILURE_POLICY = "fail"
# The connector rules are vLLM's synchronous scheduler's (core/kv_connector.py): a pool that
# leaves async_scheduling out schedules synchronously (vLLM would turn it on: core/resolve.py).
POOL_DEFAULTS: dict[str, Any] = {"async_scheduling": False}


def is_pd(config: Mapping[str, Any]) -> bool:
    """A config is P/D iff it has a `prefill` or a `decode` key."""
    return "prefill" in config or "decode" in config


def pool_given(config: Mapping[str, Any], pool: str) -> dict[str, Any]:
    """A pool's settings: the defaults, the top-level keys, then the pool's own object."""
    own = config.get(pool)
    if own is None:
        own = {}
    if not isinstance(own, dict):
        raise ConfigError(pool, f"expected an object of engine config keys, got {own!r:.40}")
    shared = {k: v for k, v in config.items() if k not in PD_KEYS}
    return {**POOL_DEFAULTS, **shared, **own}


def pool_configs(config: Mapping[str, Any],
                 usage_context: str = "api_server") -> dict[str, list[EngineConfig]]:
    """{"prefill": [...], "decode": [...]}: one resolved config per replica of each pool
    (core/resolve.py resolve_fleet, so mixed replicas take `replica_configs` as a fleet's do)."""
    pools: dict[str, list[EngineConfig]] = {}
    for pool in POOLS:
        given = pool_given(config, pool)
        try:
            configs = resolve_fleet(given, usage_context)
        except ConfigError as err:
            raise ConfigError(f"{pool}.{err.field}", err.message) from err
        if configs[0].data_parallel_size > 1:
            raise ConfigError(f"{pool}.data_parallel_size", "a pool's engines are its "
                              "`replicas` behind the pool's router")
        for replica_config in configs:
            check_pool(pool, replica_config)
        pools[pool] = configs
    return pools


def link_spec(config: Mapping[str, Any]) -> LinkSpec:
    link = config.get("kv_link")
    if link is not None and not isinstance(link, dict):
        raise ConfigError("kv_link", f"expected an object (kind, gbps, latency_ms), got "
                          f"{link!r:.40}")
    return LinkSpec.from_dict(link)


def pd_threshold(config: Mapping[str, Any]) -> int:
    """llm-d's decider nonCachedTokens (PrefixBasedPDDecider; 0, its default, always splits)."""
    value = config.get("pd_threshold", 0)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ConfigError("pd_threshold", f"expected an integer >= 0 (prompt tokens), got "
                          f"{value!r:.40}")
    return value


def failure_policy(config: Mapping[str, Any]) -> str:
    """What a decode replica does with a failed KV load (core/kv_connector.py D5): vLLM's
    KVTransferConfig.kv_load_failure_policy, "fail" (its default) or "recompute"."""
    value = config.get("kv_load_failure_policy", DEFAULT_FAILURE_POLICY)
    if value not in FAILURE_POLICIES:
        raise ConfigError("kv_load_failure_policy", f"expected one of "
                          f"{', '.join(FAILURE_POLICIES)}, got {value!r:.40}")
    return str(value)


def pool_router(pool: str, configs: Sequence[EngineConfig], seed: int) -> Router:
    first = configs[0]
    try:
        return make_router(first.router, len(configs), first.router_config, seed,
                           first.block_size)
    except ConfigError as err:
        raise ConfigError(f"{pool}.{err.field}", err.message) from err


def pd_fleet_from(config: Mapping[str, Any], specs: Sequence[RequestSpec],
                  records: bool = False, seed: int = 0) -> PDFleet:
    """The P/D fleet a config describes, over `specs` (`records`: its run yields both pools'
    steps, core/pd_events.py)."""
    pools = pool_configs(config)
    link, threshold = link_spec(config), pd_threshold(config)
    return PDFleet(pools["prefill"], pools["decode"], specs,
                   pool_router("prefill", pools["prefill"], seed),
                   pool_router("decode", pools["decode"], seed), link, threshold,
                   failure_policy=failure_policy(config), records=records)
