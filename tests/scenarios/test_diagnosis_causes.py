"""Small traces built to have one cause each (a burst, a budget too large for ITL, too few
seqs, too little KV, a knob that changes nothing): the verdict each gets, and that no knob is
called confirmed while another p99 or the throughput worsens beyond the threshold."""

from __future__ import annotations

from typing import Any

import pytest
from support.paths import shared_path

from servescope.core.config import EngineConfig
from servescope.core.request import RequestSpec
from servescope.scenarios.diagnosis_check import check_recommendation, diagnose_run
from servescope.scenarios.knob_outcome import NEGLIGIBLE, REPORTED

BASE = {"block_size": 16, "enable_prefix_caching": False, "max_num_batched_tokens": 2048}


def _config(**fields: Any) -> EngineConfig:
    return EngineConfig.from_dict({**BASE, **fields})


def _checked(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for v in result["verdicts"] for r in v["recommendations"]
            if r["expected"] and r["expected"]["checked"]]


def _assert_no_harm_confirmed(result: dict[str, Any]) -> None:
    """Worked out from the raw before/after, not from the outcome's own effect labels."""
    for rec in _checked(result):
        metrics = rec["expected"]["metrics"]
        assert set(REPORTED) <= set(metrics), rec["flag"]
        if rec["expected"]["outcome"] != "confirmed":
            continue
        for name in REPORTED:
            before, after = metrics[name]["before"], metrics[name]["after"]
            sign = -1 if name == "output_throughput" else 1
            assert sign * (after - before) / before <= NEGLIGIBLE, (rec["flag"], name)


def _knob(result: dict[str, Any], kind: str, flag: str, value: Any) -> dict[str, Any]:
    verdict = next(v for v in result["verdicts"] if v["kind"] == kind)
    return next(r for r in verdict["recommendations"] if (r["flag"], r["value"]) == (flag, value))


def test_a_burst_beyond_prefill_capacity_is_its_own_verdict() -> None:
    # 40 prompts of 4000 tokens within 0.39 s; 2048-token steps at the placeholder's
    # 10 ms + 0.02 ms a token prefill 2048 / 50.96 ms = 40,188 tokens a second, so 160,000
    # tokens take 3.98 s: the last waits about 3.98 - 0.39 - 4000 / 40,188 = 3.49 s.
    specs = [RequestSpec(f"b{i}", 4000, 8, arrival_s=0.01 * i) for i in range(40)]
    result = diagnose_run(_config(num_gpu_blocks=20001, max_num_seqs=256), specs)
    assert result["dominant"] == "arrival_burst"
    stats = result["stats"]
    assert (stats["burst_requests"], stats["burst_prompt_tokens"]) == (40, 160_000)
    assert stats["prefill_tokens_per_s"] == pytest.approx(2048 / 0.05096, rel=1e-6)
    assert stats["burst_wait_s"] == pytest.approx(160_000 / (2048 / 0.05096) - 0.39 - 4000
                                                  / (2048 / 0.05096), rel=1e-3)
    _assert_no_harm_confirmed(result)


def test_a_budget_too_large_for_itl_is_tried_both_ways() -> None:
    # 16 decoders share steps with a 4000-token prompt every 0.5 s under an 8192 budget.
    specs = ([RequestSpec(f"d{i}", 48, 400, arrival_s=0.0) for i in range(16)]
             + [RequestSpec(f"p{i}", 4000, 8, arrival_s=0.5 * (i + 1)) for i in range(8)])
    result = diagnose_run(_config(num_gpu_blocks=4001, max_num_seqs=64,
                                  max_num_batched_tokens=8192), specs)
    assert result["dominant"] == "token_budget"
    top = result["verdicts"][0]
    assert top["explains"] == ["itl", "tpot", "e2el"]
    down = _knob(result, "token_budget", "--max-num-batched-tokens", 2048)["expected"]
    up = _knob(result, "token_budget", "--max-num-batched-tokens", 16384)["expected"]
    # a 2048 chunk of a 4000 prompt: the slowest step 10 + 0.02 * (2048 + 16) ms, not 90 ms
    assert down["metrics"]["p99_itl_ms"]["after"] < 0.7 * down["metrics"]["p99_itl_ms"]["before"]
    assert down["outcome"] in ("confirmed", "trade_off") and up["outcome"] != "confirmed"
    _assert_no_harm_confirmed(result)


def test_too_few_seqs_is_the_slot_limit_and_more_seqs_are_confirmed() -> None:
    specs = [RequestSpec(f"r{i}", 64, 50, arrival_s=0.02 * i) for i in range(20)]
    result = diagnose_run(_config(num_gpu_blocks=2001, max_num_seqs=2), specs)
    assert result["dominant"] == "batch_slots"
    seqs = result["verdicts"][0]["recommendations"][0]
    assert seqs["flag"] == "--max-num-seqs" and seqs["expected"]["outcome"] == "confirmed"
    assert "p99_ttft_ms" in seqs["expected"]["improved"]
    _assert_no_harm_confirmed(result)


def test_too_little_kv_starves_and_fewer_seqs_is_a_trade_off() -> None:
    # 400 usable blocks of 16 = 6,400 tokens for 40 requests growing to 364 tokens.
    specs = [RequestSpec(f"r{i}", 64, 300, arrival_s=0.05 * i) for i in range(40)]
    result = diagnose_run(_config(num_gpu_blocks=401, max_num_seqs=64), specs)
    assert result["dominant"] == "kv_starvation"
    assert result["summary"]["num_preemptions"] > 0
    fewer = _knob(result, "kv_starvation", "--max-num-seqs", 17)["expected"]
    # no preemptions, but requests wait for a slot instead: TTFT is worse, so not confirmed
    assert fewer["metrics"]["num_preemptions"]["after"] == 0
    assert fewer["outcome"] == "trade_off" and "p99_ttft_ms" in fewer["worsened"]
    _assert_no_harm_confirmed(result)


def test_a_knob_that_changes_nothing_is_negligible() -> None:
    # every prompt is under the chunk cap: the capped run is the same run
    specs = [RequestSpec(f"r{i}", 64, 50, arrival_s=0.02 * i) for i in range(20)]
    config = _config(num_gpu_blocks=2001, max_num_seqs=2)
    result = diagnose_run(config, specs, check=False)
    rec = {"flag": "--long-prefill-token-threshold", "value": 512, "why": "",
           "change": {"long_prefill_token_threshold": 512}, "targets": [["p99_itl_ms", "down"]]}
    out = check_recommendation(rec, config, specs, result["summary"], None, derived=False)
    assert out["outcome"] == "negligible" and out["improved"] == out["worsened"] == []
    assert all(m["change"] == 0.0 for m in out["metrics"].values())


def test_the_azure_code_trace_names_its_burst_and_confirms_no_harm() -> None:
    from servescope.traces.registry import open_trace

    path = shared_path("traces", "AzureLLMInferenceTrace_code.csv")
    specs = list(open_trace(path, "azure")[1])
    config = EngineConfig(model="meta-llama/Llama-3.1-8B-Instruct", gpu="H100",
                          max_num_seqs=1024, max_num_batched_tokens=8192)
    result = diagnose_run(config, specs)
    assert result["dominant"] == "arrival_burst"
    assert result["stats"]["burst_prompt_tokens"] > 500_000
    _assert_no_harm_confirmed(result)
    flags = {(r["flag"], r["value"]): r["expected"]["outcome"] for r in _checked(result)}
    assert flags[("--max-num-batched-tokens", 16384)] != "confirmed"
    assert ("--max-num-batched-tokens", 2048) in flags
