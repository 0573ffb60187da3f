"""vLLM 0.33's speculative rules on hand-made cases (vllm/v1/core/sched/scheduler.py)."""

from __future__ import annotations

from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.request import RequestSpec


def _run(spec: dict, specs: list[RequestSpec], **config) -> list[dict]:
    data = {"num_gpu_blocks": 64, "block_size": 4, "max_num_batched_tokens": 64,
            "speculative_config": spec, **config}
    return [r.to_dict() for r in Engine(EngineConfig.from_dict(data), specs).run()]


NGRAM3 = {"method": "ngram", "num_speculative_tokens": 3}


def test_first_drafts_only_after_the_prompt_then_rollback():
    # Scheduler.update_draft_token_ids drops drafts of a prefill chunk; update_from_output
    # rolls num_computed_tokens back by the rejected drafts
    rows = _run(NGRAM3, [RequestSpec("a", 10, 6, arrival_step=0, spec_accepted=(1, 3))],
                max_num_batched_tokens=6)
    plan = [(s["n"], s["start"], s["drafts"], s["accepted"]) for r in rows for s in r["scheduled"]]
    # chunks 6 + 4 (no drafts), then 1 + 3 drafts: 1 accepted -> 2 tokens, start 10 + 2
    assert plan[:4] == [(6, 0, 0, 0), (4, 6, 0, 0), (4, 10, 3, 1), (4, 12, 3, 3)]
    assert rows[3]["finished"] == ["a"]  # 1 + 2 + 4 = 7 tokens cut at max_tokens 6


def test_drafts_trimmed_to_the_token_budget():
    # Scheduler.schedule: num_new_tokens = min(num_tokens_with_spec - computed, budget);
    # spec_token_ids[:num_scheduled_spec_tokens]
    specs = [RequestSpec("a", 2, 9, arrival_step=0), RequestSpec("b", 4, 9, arrival_step=0)]
    rows = _run(NGRAM3, specs, max_num_batched_tokens=6)
    second = rows[1]["scheduled"]
    assert [(s["id"], s["n"], s["drafts"]) for s in second] == [("a", 4, 3), ("b", 2, 1)]


def test_lookahead_blocks_for_eagle_not_ngram():
    # KVCacheManager.allocate_slots reserves num_lookahead_tokens (= K for eagle3, 0 ngram)
    one = [RequestSpec("a", 8, 4, arrival_step=0)]
    eagle = _run({"method": "eagle3", "num_speculative_tokens": 3}, one)
    ngram = _run(NGRAM3, one)
    assert len(eagle[0]["new_blocks"]["a"]) == 3  # ceil((8 + 3) / 4)
    assert len(ngram[0]["new_blocks"]["a"]) == 2


def test_full_hit_admission_padded_with_placeholder_drafts():
    # Scheduler.schedule pads a one-token admission to 1 + K; padding uses no spec_accepted
    shared = (("sys", 8),)
    specs = [RequestSpec("a", 9, 6, arrival_step=0, prefix=shared),
             RequestSpec("b", 9, 4, arrival_step=3, prefix=shared, spec_accepted=(2,))]
    rows = _run(NGRAM3, specs, enable_prefix_caching=True)
    b = [(s["n"], s["drafts"], s["accepted"]) for r in rows for s in r["scheduled"]
         if s["id"] == "b"]
    assert b[0] == (4, 3, 0) and b[1] == (4, 3, 2)


def test_preemption_drops_held_drafts():
    # _preempt_request clears spec_token_ids: the resume recomputes without drafts
    specs = [RequestSpec(f"r{i}", 6, 30, arrival_step=0) for i in range(3)]
    rows = _run(NGRAM3, specs, num_gpu_blocks=16)
    resumed = [(r["step"], s) for r in rows for s in r["scheduled"] if s["id"] in r["resumed"]]
    assert resumed and all(s["drafts"] == 0 and s["kind"] == "prefill" for _, s in resumed)


def test_async_placeholders_schedule_drafts_right_after_the_prompt():
    # AsyncScheduler._update_after_schedule: K placeholder drafts at once
    rows = _run(NGRAM3, [RequestSpec("a", 6, 5, arrival_step=0, spec_accepted=(3,))],
                async_scheduling=True)
    plan = [(s["n"], s["start"], s["drafts"]) for r in rows for s in r["scheduled"]]
    assert plan[:2] == [(6, 0, 0), (4, 6, 3)]
