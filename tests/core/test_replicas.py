"""Data parallelism as a fleet: every request served once, each rank with its own pool, the
ranks balanced by vLLM's DP rule and the speculative counters summed."""

from __future__ import annotations

from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.fleet import RoutedArrival
from servescope.core.replicas import DataParallel
from servescope.core.request import RequestSpec


def _specs(n: int) -> list[RequestSpec]:
    return [RequestSpec(f"r{i}", 30 + i % 7, 6, arrival_s=0.0001 * i) for i in range(n)]


def _step_time(num_scheduled, num_context) -> float:  # type: ignore[no-untyped-def]
    return 1.0 + 0.01 * float(num_scheduled.sum())


def test_two_replicas_serve_every_request_in_about_half_the_time() -> None:
    base = EngineConfig(block_size=4, num_gpu_blocks=40, max_num_seqs=4,
                        max_num_batched_tokens=64)
    specs = _specs(24)
    one = Engine(base, specs, _step_time)
    one.run_to_end()
    two = DataParallel(base.replace(data_parallel_size=2), specs, _step_time, records=False)
    two.run_to_end()
    summary = two.summary()
    assert summary["completed"] == 24 and summary["data_parallel_size"] == 2
    assert sorted(r.id for r in two.done_requests) == sorted(s.id for s in specs)
    assert summary["duration"] < 0.7 * one.summary()["duration"]
    assert [r["completed"] for r in summary["replicas"]] == [12, 12]


def test_a_burst_before_any_stats_spreads_round_robin() -> None:
    # get_core_engine_for_request: every engine at 0, each pick raises its local waiting count
    # and rotates the scan start, so a burst inside one stats interval goes 0, 1, 2, 0, ...
    base = EngineConfig(block_size=4, num_gpu_blocks=40, data_parallel_size=3)
    fleet = DataParallel(base, _specs(9), _step_time)
    routed = [i.replica for i in fleet.run() if isinstance(i, RoutedArrival)]
    assert routed == [0, 1, 2] * 3
    assert len(fleet.done_requests) == 9


def test_speculative_counters_are_summed_over_the_ranks() -> None:
    """Each rank counts its own verifies (vLLM's SpecDecodingStats per engine); the summary
    holds the sums, as two engines run on the ranks' shares count them."""
    spec = {"method": "ngram", "num_speculative_tokens": 3}
    config = EngineConfig(block_size=4, num_gpu_blocks=200, speculative_config=spec)
    specs = [RequestSpec(f"r{i}", 12 + i, 20, arrival_s=0.0001 * i,
                         spec_accepted=(3, 1, 0, 2) * 5) for i in range(6)]
    two = DataParallel(config.replace(data_parallel_size=2), specs, _step_time, records=False)
    two.run_to_end()
    summary = two.summary()
    alone = []
    for replica in (0, 1):
        share = [s for s in specs if two.replica_of[s.id] == replica]
        engine = Engine(config, share, _step_time, records=False)
        engine.run_to_end()
        alone.append(engine.summary())
    for key in ("num_drafts", "num_draft_tokens", "num_accepted_tokens"):
        assert summary[key] == alone[0][key] + alone[1][key] > 0, key
    assert summary["acceptance_rate"] == (summary["num_accepted_tokens"]
                                          / summary["num_draft_tokens"])
