"""A track's finished requests travel to a job's worker as columns: pickled and rebuilt there,
their metrics are the engine's own, request by request (preempted ones, token stretches broken by a
preemption, the front end's overhead), and a snapshot taken mid-run holds the requests done so
far."""

from __future__ import annotations

import pickle

from servescope.api.reports.done_requests import DoneRequests
from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.request import RequestSpec

# 48 blocks of 16 tokens for up to 16 requests of up to 300 tokens: preemptions by recompute
CONFIG = EngineConfig(num_gpu_blocks=48, block_size=16, max_num_seqs=16,
                      max_num_batched_tokens=128, frontend_overhead_ms=1.5)


def engine() -> Engine:
    specs = [RequestSpec(id=f"r{k}", prompt_len=20 + 7 * k % 180, output_len=1 + 11 * k % 120,
                         arrival_s=k * 0.004) for k in range(120)]
    return Engine(CONFIG, specs)


def test_the_columns_give_the_engines_request_metrics_after_pickling() -> None:
    e = engine()
    for _ in e.run():
        pass
    shipped = pickle.loads(pickle.dumps(DoneRequests.of(e)))
    expected = e.request_metrics()
    assert shipped.metrics() == expected and len(expected) == 120
    assert sum(m["num_preemptions"] for m in expected) > 0
    assert any(m["output_len"] == 1 and m["itl_ms"] == [] and m["tpot_ms"] is None
               for m in expected)


def test_a_snapshot_mid_run_holds_the_requests_finished_so_far() -> None:
    e = engine()
    records = e.run()
    while len(e.done_requests) < 40:
        next(records)
    snapshot = DoneRequests.of(e)
    done_then = e.request_metrics()
    for _ in records:  # the engine runs on; the snapshot does not change
        pass
    assert snapshot.metrics() == done_then and len(e.done_requests) == 120


def test_a_speculating_runs_columns_carry_each_requests_drafts_and_accepted() -> None:
    specs = [RequestSpec(id=f"r{k}", prompt_len=20 + 7 * k % 60, output_len=2 + 11 * k % 40,
                         arrival_s=k * 0.004) for k in range(30)]
    config = EngineConfig.from_dict({**CONFIG.to_dict(), "speculative_config": {
        "method": "ngram", "num_speculative_tokens": 3, "acceptance_rates": [0.5]}})
    e = Engine(config, specs)
    e.run_to_end()
    shipped = pickle.loads(pickle.dumps(DoneRequests.of(e)))
    expected = e.request_metrics()
    assert shipped.metrics() == expected
    assert sum(m["accepted"] for m in expected) == e.summary()["num_accepted_tokens"] > 0
