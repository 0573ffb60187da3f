"""Data-parallel replicas: every request served once, each rank with its own pool."""

from __future__ import annotations

from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.invariants import check_invariants
from servescope.core.replicas import Replicas, split
from servescope.core.request import RequestSpec


def _specs(n: int) -> list[RequestSpec]:
    return [RequestSpec(f"r{i}", 30 + i % 7, 6, arrival_s=0.0001 * i) for i in range(n)]


def _step_time(num_scheduled, num_context) -> float:  # type: ignore[no-untyped-def]
    return 1.0 + 0.01 * float(num_scheduled.sum())


def test_requests_are_dealt_round_robin_in_arrival_order() -> None:
    parts = split(list(reversed(_specs(5))), 2)
    assert [[s.id for s in p] for p in parts] == [["r0", "r2", "r4"], ["r1", "r3"]]


def test_two_replicas_serve_every_request_in_about_half_the_time() -> None:
    base = EngineConfig(block_size=4, num_gpu_blocks=40, max_num_seqs=4,
                        max_num_batched_tokens=64)
    specs = _specs(24)
    one = Engine(base, specs, _step_time)
    for record in one.run():
        check_invariants(one.scheduler, record)
    two = Replicas(base.replace(data_parallel_size=2), specs, _step_time)
    first = two.engines[0]  # what Replicas.run does, rank 0's invariants checked each step
    for engine in two.engines[1:]:
        engine.run_to_end()  # (counted: core/kv_counting.py)
    for record in first.run():
        check_invariants(first.scheduler, record)
    summary = two.summary()
    assert summary["completed"] == 24 and summary["data_parallel_size"] == 2
    assert sorted(r.id for r in two.done_requests) == sorted(s.id for s in specs)
    assert summary["duration"] < 0.7 * one.summary()["duration"]


def test_run_yields_rank_zeros_records_after_the_others_ran() -> None:
    base = EngineConfig(block_size=4, num_gpu_blocks=40, data_parallel_size=3)
    replicas = Replicas(base, _specs(9), _step_time)
    finished = [f for record in replicas.run() for f in record.finished]
    assert sorted(finished) == ["r0", "r3", "r6"]
    assert len(replicas.done_requests) == 9


def test_speculative_counters_are_summed_over_the_ranks() -> None:
    """Each rank counts its own verifies (vLLM's SpecDecodingStats per engine); the summary
    holds the sums, as two engines run on the two halves count them."""
    spec = {"method": "ngram", "num_speculative_tokens": 3}
    config = EngineConfig(block_size=4, num_gpu_blocks=200, speculative_config=spec)
    specs = [RequestSpec(f"r{i}", 12 + i, 20, arrival_s=0.0001 * i,
                         spec_accepted=(3, 1, 0, 2) * 5) for i in range(6)]
    two = Replicas(config.replace(data_parallel_size=2), specs, _step_time, records=False)
    for engine in two.engines:
        engine.run_to_end()
    summary = two.summary()
    halves = [Engine(config, part, _step_time, records=False) for part in split(specs, 2)]
    for engine in halves:
        engine.run_to_end()
    for key in ("num_drafts", "num_draft_tokens", "num_accepted_tokens"):
        assert summary[key] == sum(e.summary()[key] for e in halves) > 0, key
    assert summary["acceptance_rate"] == (summary["num_accepted_tokens"]
                                          / summary["num_draft_tokens"])
    assert summary["acceptance_source"] == halves[0].summary()["acceptance_source"]
