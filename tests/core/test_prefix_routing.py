"""The behaviour prefix-aware routing is for (issue #35): on multi-tenant traffic whose tenants
share system prompts, routing by where prefixes are cached (llm-d's approximate and precise
scorers, and its default profile) finds more prefix-cache hits and a lower p99 TTFT than
round-robin, which spreads every tenant over every replica's too-small cache; and when no two
prompts share anything, that advantage is gone. Figures are read from each run, nothing else."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.fleet import Fleet
from servescope.core.request import RequestSpec
from servescope.core.routers.make import make_router
from servescope.traces.tenants import multi_tenant

REPLICAS = 4
# 8 tenants' 2048-token system prompts are 1024 blocks of 16: one replica's 699 usable blocks
# hold a few of them, not all, so a replica that serves every tenant keeps evicting them
CONFIG = EngineConfig.from_dict({"num_gpu_blocks": 700, "block_size": 16,
                                 "enable_prefix_caching": True,
                                 "max_num_batched_tokens": 2048})
SHARED = multi_tenant(np.random.default_rng(7), 600, 12.0, num_tenants=8,
                      system_prompt_len=2048, turns=(1, 3), user_len=(32, 256),
                      output_len=(16, 64), think_s=2.0)
UNIQUE = [dataclasses.replace(s, prefix=()) for s in SHARED]  # same lengths, nothing shared


def run(router: str, specs: list[RequestSpec]) -> tuple[float, float]:
    """(prefix-cache hit rate over the fleet's prompts, fleet p99 TTFT in ms) of one run."""
    fleet = Fleet([CONFIG] * REPLICAS, specs, make_router(router, REPLICAS, {}, 0, 16),
                  records=False)
    fleet.run_to_end()
    done = fleet.done_requests
    assert len(done) == len(specs)
    hits = sum(max(r.num_cached_tokens, 0) for r in done) / sum(r.prompt_len for r in done)
    return hits, fleet.summary()["p99_ttft_ms"]


@pytest.fixture(scope="module")
def round_robin() -> dict[str, tuple[float, float]]:
    return {"shared": run("round-robin", SHARED), "unique": run("round-robin", UNIQUE)}


@pytest.mark.parametrize("router", ["prefix-approx", "prefix-precise", "llm-d"])
def test_prefix_aware_routing_beats_round_robin_only_when_prefixes_are_shared(
        router: str, round_robin: dict[str, tuple[float, float]]) -> None:
    hits, p99 = run(router, SHARED)
    rr_hits, rr_p99 = round_robin["shared"]
    assert hits > rr_hits and p99 < rr_p99
    unique_hits, unique_p99 = run(router, UNIQUE)
    rr_unique_hits, rr_unique_p99 = round_robin["unique"]
    assert unique_hits == rr_unique_hits == 0.0  # nothing to find
    # the gap closes: the share of round-robin's p99 saved is smaller without shared prefixes
    saved_shared = (rr_p99 - p99) / rr_p99
    saved_unique = (rr_unique_p99 - unique_p99) / rr_unique_p99
    assert saved_unique < saved_shared


def test_a_replica_takes_the_routers_prompt_hashes_only_when_it_hashes_alike() -> None:
    """llm-d hashes each prompt to pick; a replica of its block size takes those hashes (none
    left over) and one of another block size hashes its own, and either finds the prefix hits
    its share finds on an engine alone. Some prompts are a shared prefix whole, a whole
    number of blocks: a hit never covers their last block (vLLM caps it at num_tokens - 1)."""
    other = dataclasses.replace(CONFIG, block_size=32, num_gpu_blocks=350)
    bare = [dataclasses.replace(s, id=f"bare-{s.id}", prompt_len=s.prefix[0][1],
                                prefix=s.prefix[:1]) for s in SHARED[:240:8]]
    assert all(s.prompt_len % 32 == 0 for s in bare)
    specs = SHARED[:240] + bare
    fleet = Fleet([CONFIG, other], specs, make_router("llm-d", 2, {}, 0, 16), records=False)
    assert [hasher is not None for hasher in fleet.hashers] == [True, False]
    fleet.run_to_end()
    for replica, (engine, config) in enumerate(zip(fleet.engines, (CONFIG, other),
                                                   strict=True)):
        assert not engine.kv.hasher.given  # every prompt handed over was taken
        share = [s for s in specs if fleet.replica_of[s.id] == replica]
        alone = Engine(config, share, records=False)
        alone.run_to_end()
        assert 0 < len(share) < len(specs)
        assert ([r.num_cached_tokens for r in engine.done_requests]
                == [r.num_cached_tokens for r in alone.done_requests])
        assert sum(r.num_cached_tokens for r in alone.done_requests) > 0
