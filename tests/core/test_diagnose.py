"""Diagnosis from hand-sized runs: each blocking cause counted as worked out by hand."""

from __future__ import annotations

import json

from support.factories import make_config, make_requests, run_checked

from servescope.core.diagnose import VERDICTS, diagnose
from servescope.core.engine import Engine


def _run(config, specs):
    engine = Engine(config, specs)
    records = list(engine.run())
    return records, engine.summary()


def test_slot_limit_counts_the_steps_a_request_waited_for_a_slot() -> None:
    # max_num_seqs 1, two 4-token prompts with 3 outputs each: r0 runs steps 0-2 (prefill +
    # 2 decodes) while r1 waits, then r1 runs steps 3-5. Three of six steps are slot-blocked.
    config = make_config(max_num_seqs=1, num_gpu_blocks=64)
    records = run_checked(config, make_requests((4, 3), (4, 3)))
    assert len(records) == 6
    result = diagnose(records, _run(config, make_requests((4, 3), (4, 3)))[1], config)
    assert result["stats"]["blocked_slots_steps"] == 3
    assert result["stats"]["blocked_slots_share"] == 0.5
    assert result["dominant"] == "batch_slots"
    rec = result["verdicts"][0]["recommendations"][0]
    assert rec["flag"] == "--max-num-seqs" and rec["change"]["max_num_seqs"] > 1


def test_budget_blocking_when_a_prompt_needs_several_steps() -> None:
    # budget 8, prompts of 16: r0 takes steps 0 and 1 for its prefill, r1 waits behind it.
    config = make_config(max_num_batched_tokens=8, num_gpu_blocks=128)
    specs = make_requests((16, 2), (16, 2))
    records, summary = _run(config, specs)
    result = diagnose(records, summary, config)
    stats = result["stats"]
    assert stats["blocked_budget_steps"] >= 2
    assert stats["prefill_chunks_mean"] == 2.0  # 16 tokens / 8 per step
    assert result["dominant"] == "token_budget"


def test_preemptions_make_kv_starvation() -> None:
    # 16 blocks of 4 tokens (15 usable = 60 tokens) for three requests growing to 40 tokens.
    config = make_config(num_gpu_blocks=16, max_num_batched_tokens=64)
    records, summary = _run(config, make_requests((8, 32), (8, 32), (8, 32)))
    assert summary["num_preemptions"] > 0
    result = diagnose(records, summary, config)
    kinds = [v["kind"] for v in result["verdicts"]]
    assert set(kinds) <= set(VERDICTS)
    kv = next(v for v in result["verdicts"] if v["kind"] == "kv_starvation")
    evidence = {e["name"]: e["value"] for e in kv["evidence"]}
    assert evidence["num_preemptions"] == summary["num_preemptions"]
    # 60 tokens hold 1.5 requests of 40: memory fit outranks the starvation it causes.
    assert result["stats"]["kv_fit_requests"] == 60 / 40
    assert result["dominant"] == "memory_fit"


def test_decode_floor_needs_the_floor_and_says_so() -> None:
    config = make_config(num_gpu_blocks=64)
    records, summary = _run(config, make_requests((4, 20)))
    without = diagnose(records, summary, config)
    assert "decode_floor" not in [v["kind"] for v in without["verdicts"]]
    assert any(m["needed_for"] == "decode_floor" for m in without["missing"])
    floor = summary["median_itl_ms"] * 0.98
    with_floor = diagnose(records, summary, config, {"decode_floor_ms": floor})
    assert with_floor["dominant"] == "decode_floor"
    assert not any(m["needed_for"] == "decode_floor" for m in with_floor["missing"])


def test_summary_only_diagnosis_names_what_is_missing() -> None:
    summary = {"completed": 10, "num_preemptions": 12, "median_ttft_ms": 100.0,
               "p99_ttft_ms": 900.0}
    result = diagnose([], summary, make_config())
    missing = {m["metric"] for m in result["missing"]}
    assert any(m.startswith("per-step records") for m in missing)
    assert {"p99_itl_ms", "median_itl_ms"} <= missing
    assert result["dominant"] == "kv_starvation"  # 1.2 preemptions per request
    assert all(m["still_concluded"] for m in result["missing"])


def test_an_idle_run_has_no_dominant_bottleneck_and_is_plain_json() -> None:
    config = make_config(num_gpu_blocks=64)
    records, summary = _run(config, make_requests((4, 2)))
    result = diagnose(records, summary, config)
    assert result["dominant"] is None
    assert json.loads(json.dumps(result)) == result
