"""The prefix-routing lesson's preset says what its runs give: on multi-tenant traffic whose
system prompts do not all fit one replica's cache, round-robin spreads every tenant over every
replica (about half the prompt tokens cached, p99 TTFT about 1 s), while prefix-approx and llm-d
keep each tenant on one replica (about 90% cached, p99 TTFT under 100 ms). Every figure of its
description is read from the preset's config or from the runs, never from the code."""

from __future__ import annotations

from collections import defaultdict
from functools import cache
from typing import Any

import pytest
from support.factories import routed_of

from servescope.core.fleet import make_fleet
from servescope.scenarios import presets
from servescope.scenarios.diagnosis_check import prepare

NAME = "lesson-prefix-routing"
PREFIX_AWARE = ("prefix-approx", "llm-d")


@cache
def runs() -> dict[str, dict[str, Any]]:
    """Each variant's fleet-wide hit rate (cached prompt tokens over prompt tokens), p99 TTFT
    and the replicas each tenant's turns went to, as the explorer runs it."""
    _, specs, _ = presets.load_preset(NAME)
    tenant_of = {s.id: s.prefix[0][0] for s in specs}  # the system prompt is the first segment
    out = {}
    for variant, config in presets.variants(NAME):
        priced, step_time = prepare(config)
        fleet = make_fleet([priced] * config.replicas, specs, [step_time] * config.replicas,
                           records=False)
        decisions = routed_of(fleet)
        done = fleet.done_requests
        assert len(done) == len(specs)
        where: dict[str, set[int]] = defaultdict(set)
        for routed in decisions:
            where[tenant_of[routed.request_id]].add(routed.replica)
        out[variant] = {
            "hit_rate": sum(max(r.num_cached_tokens, 0) for r in done)
            / sum(r.prompt_len for r in done),
            "p99_ttft_ms": fleet.summary()["p99_ttft_ms"],
            "replicas_per_tenant": sorted(len(r) for r in where.values())}
    return out


def test_the_description_names_the_presets_config_and_workload() -> None:
    config, specs, data = presets.load_preset(NAME)
    generator = data["workload"]["generator"]
    text = data["description"]
    assert generator["name"] == "multi_tenant"
    assert len(specs) == 300 and "300 chat turns" in text
    assert len({s.prefix[0] for s in specs}) == generator["num_tenants"] == 8
    assert {s.prefix[0][1] for s in specs} == {2048}  # every tenant's system prompt
    assert config.replicas == 4 and "4 replicas" in text
    assert config.model == "meta-llama/Llama-3.1-8B-Instruct" and config.gpu == "H100"
    assert config.num_gpu_blocks == 700 and config.block_size == 16
    # one block is vLLM's null block: the usable rest holds 5 whole prompts of the 8
    assert (config.num_gpu_blocks - 1) * config.block_size // 2048 == 5
    assert [v for v, _ in presets.variants(NAME)] == ["round-robin", *PREFIX_AWARE]
    assert [c.router for _, c in presets.variants(NAME)] == ["round-robin", *PREFIX_AWARE]


def test_round_robin_spreads_every_tenant_and_thrashes_every_cache() -> None:
    rr = runs()["round-robin"]
    assert rr["replicas_per_tenant"] == [4] * 8
    assert 0.4 <= rr["hit_rate"] <= 0.6  # "about half"
    assert 700 <= rr["p99_ttft_ms"] <= 1500  # "about 1 s"


@pytest.mark.parametrize("router", PREFIX_AWARE)
def test_prefix_aware_routing_keeps_each_tenant_on_one_replica(router: str) -> None:
    run, rr = runs()[router], runs()["round-robin"]
    assert run["replicas_per_tenant"] == [1] * 8
    assert 0.85 <= run["hit_rate"] <= 0.95  # "about 90%"
    assert run["p99_ttft_ms"] < 100
    assert run["p99_ttft_ms"] < rr["p99_ttft_ms"] / 10  # "less than a tenth of round-robin's"
