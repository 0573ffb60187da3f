"""Diagnosis of a run already speculating: a different num_speculative_tokens is suggested
when the estimate says it pays more, and the re-simulation checks it."""

from __future__ import annotations

from servescope.core.config import EngineConfig
from servescope.core.request import RequestSpec
from servescope.scenarios.diagnosis_check import diagnose_run


def _diagnose(num_requests: int, k: int, rates: list[float], check: bool = True) -> dict:
    config = EngineConfig.from_dict({
        "model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100", "max_model_len": 4096,
        "max_num_seqs": 512, "max_num_batched_tokens": 8192, "enable_prefix_caching": False,
        "speculative_config": {"method": "eagle3", "num_speculative_tokens": k,
                               "acceptance_rates": rates}})
    specs = [RequestSpec(f"r{i}", 128, 200, arrival_s=0.0) for i in range(num_requests)]
    return diagnose_run(config, specs, check=check, check_all=True)


def _k_verdict(result: dict) -> dict | None:
    return next((v for v in result["verdicts"] if v["kind"] == "speculation"), None)


def _moved(rec: dict) -> tuple[float, float]:
    metrics = rec["expected"]["metrics"]
    return (metrics["output_throughput"]["after"] / metrics["output_throughput"]["before"],
            metrics["median_tpot_ms"]["after"] / metrics["median_tpot_ms"]["before"])


def test_memory_bound_with_high_acceptance_suggests_more_drafts() -> None:
    # 4 requests decode: the extra rows ride on the weight read; 90% of drafts accepted
    verdict = _k_verdict(_diagnose(4, 1, [0.9]))
    assert verdict is not None
    rec = verdict["recommendations"][0]
    assert rec["change"]["speculative_config"]["num_speculative_tokens"] == 2
    throughput, tpot = _moved(rec)
    assert throughput > 1.1 and tpot < 0.9  # the re-run without our estimate agrees


def test_low_acceptance_at_later_positions_suggests_fewer_drafts() -> None:
    # about 60 decoding, K = 5, acceptance halving a position: positions 3-5 rarely pay
    verdict = _k_verdict(_diagnose(64, 5, [0.8, 0.4, 0.2, 0.1, 0.05]))
    assert verdict is not None
    evidence = {e["name"]: e["value"] for e in verdict["evidence"]}
    assert evidence["acceptance_by_position"][3] < 0.05  # measured on the run
    rec = verdict["recommendations"][0]
    change = rec["change"]["speculative_config"]
    assert change["num_speculative_tokens"] < 5
    assert len(change["acceptance_rates"]) == change["num_speculative_tokens"]
    assert rec["expected"]["outcome"] == "confirmed"
    throughput, tpot = _moved(rec)
    assert throughput > 1.05 and tpot < 0.95


def test_no_suggestion_when_the_current_k_is_best() -> None:
    result = _diagnose(64, 2, [0.8, 0.4], check=False)
    assert _k_verdict(result) is None
