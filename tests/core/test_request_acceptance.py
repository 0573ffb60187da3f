"""A speculating run's finished requests carry their own draft tokens and accepted drafts (the
`drafts` and `accepted` columns the exports read); a run without speculation carries neither."""

from __future__ import annotations

from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.request import RequestSpec

NGRAM3 = {"method": "ngram", "num_speculative_tokens": 3}


def _engine(speculative: dict | None, specs: list[RequestSpec], **config) -> Engine:
    data = {"num_gpu_blocks": 64, "block_size": 4, "max_num_batched_tokens": 64,
            "async_scheduling": False, "speculative_config": speculative, **config}
    return Engine(EngineConfig.from_dict(data), specs)


def test_a_requests_row_sums_its_verifies() -> None:
    # vLLM's update_from_output: a verify of d drafts accepting a keeps min(a, d) + 1 tokens.
    # a: prompt 10, 6 tokens; verifies of 3 drafts accept 1 (2 tokens), then 3 (cut at 6)
    # b: prompt 4, 3 tokens, no list: every verify accepts 0 (1 token each, 2 verifies)
    specs = [RequestSpec("a", 10, 6, arrival_step=0, spec_accepted=(1, 3)),
             RequestSpec("b", 4, 3, arrival_step=0, spec_accepted=())]
    engine = _engine(NGRAM3, specs)
    engine.run_to_end()
    rows = {r["id"]: r for r in engine.request_metrics()}
    assert (rows["a"]["drafts"], rows["a"]["accepted"]) == (6, 4)
    assert (rows["b"]["drafts"], rows["b"]["accepted"]) == (6, 0)


def test_rows_agree_with_the_records_and_the_summary_under_async_and_preemption() -> None:
    # tight KV (preemptions) and async scheduling (discarded in-flight outputs: accepted -1)
    specs = [RequestSpec(f"r{k}", 6 + 5 * k % 13, 4 + 7 * k % 17, arrival_step=k // 3)
             for k in range(24)]
    engine = _engine({**NGRAM3, "acceptance_rates": [0.6, 0.4, 0.2]}, specs,
                     async_scheduling=True, num_gpu_blocks=24, max_num_batched_tokens=32)
    from_records: dict[str, list[int]] = {}
    for record in engine.run():
        for entry in record.to_dict()["scheduled"]:
            if entry["drafts"] and entry["accepted"] >= 0:
                mine = from_records.setdefault(entry["id"], [0, 0])
                mine[0] += entry["drafts"]
                mine[1] += entry["accepted"]
    assert sum(r.num_preemptions for r in engine.done_requests) > 0
    rows = engine.request_metrics()
    assert {r["id"]: [r["drafts"], r["accepted"]] for r in rows if r["drafts"]} == from_records
    summary = engine.summary()
    assert sum(r["drafts"] for r in rows) == summary["num_draft_tokens"] > 0
    assert sum(r["accepted"] for r in rows) == summary["num_accepted_tokens"] > 0


def test_a_run_without_speculation_has_no_acceptance_columns() -> None:
    engine = _engine(None, [RequestSpec("a", 10, 6, arrival_step=0)])
    engine.run_to_end()
    assert "drafts" not in engine.request_metrics()[0]
