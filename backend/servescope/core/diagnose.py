"""Diagnosis of a run: which limit dominates (KV starvation, batch slots, token budget / prefill
interference, decode floor, memory fit), with its evidence, knobs by vLLM flag name and what to
measure next. Pure: records + summary + config (+ optional hardware numbers) -> plain dicts."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from servescope.core.config import EngineConfig
from servescope.core.diagnose_evidence import measure
from servescope.core.records import StepRecord

VERDICTS = ("kv_starvation", "batch_slots", "token_budget", "decode_floor", "memory_fit")
# On equal scores the more fundamental limit is named: memory shapes KV pressure, which shapes
# admission, which shapes the mix of prefill and decode in a step.
ROOT_CAUSE_ORDER = ("memory_fit", "kv_starvation", "batch_slots", "token_budget", "decode_floor")
MIN_SCORE = 0.25  # below this a verdict is reported as minor, and cannot be dominant
FIT_LOW, FIT_OK = 4.0, 16.0  # average requests the KV cache holds: memory-bound .. comfortable
FLOOR_NEAR, FLOOR_FAR = 1.15, 2.0  # median ITL / decode floor: at the floor .. far above it

Hardware = Mapping[str, float]  # decode_floor_ms; optionally weights_gib, kv_gib, memory_gib


def diagnose(records: Iterable[StepRecord], summary: Mapping[str, Any], config: EngineConfig,
             hardware: Hardware | None = None) -> dict[str, Any]:
    """{dominant, verdicts (score order), missing, stats}; every value plain JSON data. The
    records are read once, in order, and not kept (a stream of a long run's records will do).

    A verdict: {kind, title, score (0-1), evidence: [{name, value, text}], recommendations:
    [{flag, value, change (EngineConfig fields for a re-simulation), why, targets:
    [[metric, "down"|"up"]], expected: None until checked}], measure_next: [str]}.
    """
    hardware = hardware or {}
    stats = measure(records, summary, config)
    missing = _missing(stats["num_steps"], summary, config, hardware)
    verdicts = []
    for judge, needs in JUDGES:
        verdict = judge(stats, config, hardware) if any(k in stats for k in needs) else None
        if verdict is not None:
            verdicts.append(verdict)
    verdicts.sort(key=lambda v: (-v["score"], ROOT_CAUSE_ORDER.index(v["kind"])))
    for verdict in verdicts:
        verdict["minor"] = verdict["score"] < MIN_SCORE
    dominant = verdicts[0]["kind"] if verdicts and not verdicts[0]["minor"] else None
    return {"dominant": dominant, "verdicts": verdicts, "missing": missing,
            "stats": {k: _plain(v) for k, v in stats.items()}}


def _missing(num_steps: int, summary: Mapping[str, Any], config: EngineConfig,
             hardware: Hardware) -> list[dict[str, str]]:
    out = []
    if not num_steps:
        out.append({"metric": "per-step records (running, waiting, kv_usage, scheduled)",
                    "needed_for": "kv_starvation, batch_slots, token_budget",
                    "still_concluded": "TTFT/ITL tails and preemption count from the summary"})
    for key in ("p99_itl_ms", "median_itl_ms", "p99_ttft_ms", "median_ttft_ms"):
        if summary.get(key) is None:
            out.append({"metric": key, "needed_for": "token_budget, decode_floor",
                        "still_concluded": "blocking causes from the step records"})
    if "decode_floor_ms" not in hardware:
        out.append({"metric": "decode_floor_ms (a model and GPU for the roofline)",
                    "needed_for": "decode_floor",
                    "still_concluded": "every scheduling verdict; not whether ITL is at the floor"})
    if summary.get("total_input_tokens") is None or not (num_steps or config.num_gpu_blocks):
        out.append({"metric": "KV capacity and request lengths", "needed_for": "memory_fit",
                    "still_concluded": "KV pressure from usage and preemptions"})
    return out


def _verdict(kind: str, title: str, score: float, evidence: list[dict[str, Any]],
             recommendations: list[dict[str, Any]], measure_next: list[str]) -> dict[str, Any]:
    return {"kind": kind, "title": title, "score": round(min(max(score, 0.0), 1.0), 4),
            "evidence": evidence, "recommendations": recommendations,
            "measure_next": measure_next}


def _ev(name: str, value: Any, text: str) -> dict[str, Any]:
    return {"name": name, "value": _plain(value), "text": text}


def _rec(flag: str, value: Any, change: dict[str, Any], why: str,
         targets: list[tuple[str, str]]) -> dict[str, Any]:
    return {"flag": flag, "value": value, "change": change, "why": why,
            "targets": [list(t) for t in targets], "expected": None}


def _fp8_kv(stats: dict[str, Any], config: EngineConfig, why: str,
            targets: list[tuple[str, str]]) -> dict[str, Any]:
    """--kv-cache-dtype fp8: half the bytes a token, twice the usable blocks (block 0 is null)."""
    blocks = config.num_gpu_blocks or stats.get("num_usable_blocks", 0) + 1
    return _rec("--kv-cache-dtype", "fp8",
                {"kv_cache_dtype": "fp8", "num_gpu_blocks": 2 * (blocks - 1) + 1}, why, targets)


def _plain(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 6)
    if hasattr(value, "item"):
        return _plain(value.item())
    return value


def _judge_kv(stats: dict[str, Any], config: EngineConfig,
              hardware: Hardware) -> dict[str, Any]:
    share = stats.get("blocked_kv_share", 0.0)
    per_request = stats.get("preemptions_per_request", 0.0)
    # A cache that holds few requests starves by construction: that is memory fit, not this.
    fit_factor = min(stats.get("kv_fit_requests", FIT_OK) / FIT_OK, 1.0)
    score = (share + min(per_request, 1.0)) * fit_factor
    evidence = [
        _ev("num_preemptions", stats.get("num_preemptions", 0), "requests preempted (recompute)"),
        _ev("blocked_kv_share", share, "share of steps where admission waited for KV blocks"),
        _ev("kv_usage_p95", stats.get("kv_usage_p95"), "95th percentile of KV usage"),
    ]
    recs = _kv_recs(stats, config, hardware)
    return _verdict("kv_starvation", "KV-cache starvation", score, evidence, recs, [
        "vllm:num_preemptions_total and vllm:kv_cache_usage_perc over time",
        "vllm:num_requests_waiting while KV usage is near 1.0",
        "the 'GPU KV cache size' line at startup (tokens the cache holds)"])


def _kv_recs(stats: dict[str, Any], config: EngineConfig,
             hardware: Hardware) -> list[dict[str, Any]]:
    recs = []
    if config.kv_cache_dtype == "auto":
        recs.append(_fp8_kv(stats, config,
                            "FP8 KV halves bytes per token: twice the blocks in the same memory",
                            [("num_preemptions", "down"), ("p99_ttft_ms", "down")]))
    concurrency = int(stats.get("kv_fit_requests") or config.max_num_seqs // 2)
    seqs = max(1, min(config.max_num_seqs // 2, concurrency))
    if seqs < config.max_num_seqs:
        recs.append(_rec("--max-num-seqs", seqs, {"max_num_seqs": seqs},
                         "admit no more requests than the cache holds, so fewer are preempted "
                         "and recomputed", [("num_preemptions", "down")]))
    if hardware.get("memory_gib") and config.gpu_memory_utilization < 0.95:
        recs.append(_rec("--gpu-memory-utilization", 0.95, {"gpu_memory_utilization": 0.95},
                         "more of the GPU for KV blocks", [("num_preemptions", "down")]))
    return recs


def _judge_slots(stats: dict[str, Any], config: EngineConfig,
                 hardware: Hardware) -> dict[str, Any]:
    share = stats["blocked_slots_share"]
    seqs = config.max_num_seqs * 2
    fit = stats.get("kv_fit_requests")
    if fit:
        seqs = max(config.max_num_seqs + 1, min(seqs, int(fit)))
    evidence = [
        _ev("blocked_slots_share", share, "share of steps where admission waited with "
            f"max_num_seqs={config.max_num_seqs} requests running and KV to spare"),
        _ev("kv_usage_mean", stats.get("kv_usage_mean"), "mean KV usage"),
    ]
    recs = [_rec("--max-num-seqs", seqs, {"max_num_seqs": seqs},
                 "more requests decode together while blocks are free",
                 [("mean_ttft_ms", "down"), ("output_throughput", "up")])]
    return _verdict("batch_slots", "Batch-slot limit (max_num_seqs)", share, evidence, recs, [
        "vllm:num_requests_running pinned at max_num_seqs while vllm:kv_cache_usage_perc < 0.9",
        "queue time (vllm bench serve queue_times) against TTFT"])


def _judge_budget(stats: dict[str, Any], config: EngineConfig,
                  hardware: Hardware) -> dict[str, Any]:
    blocked = stats.get("blocked_budget_share", 0.0)
    ratio = stats.get("itl_tail_ratio", 1.0)
    interference = stats.get("tail_steps_with_prefill_share", 0.0) * min(
        max((ratio - 1.0) / 2.0, 0.0), 1.0)
    budget = config.max_num_batched_tokens
    evidence = [
        _ev("blocked_budget_share", blocked, f"share of steps where admission waited for the "
            f"{budget}-token budget"),
        _ev("prefill_chunks_mean", stats.get("prefill_chunks_mean"), "steps per prefill"),
        _ev("ttft_tail_ratio", stats.get("ttft_tail_ratio"), "p99 / median TTFT"),
        _ev("itl_tail_ratio", ratio, "p99 / median ITL"),
        _ev("tail_steps_with_prefill_share", stats.get("tail_steps_with_prefill_share"),
            "share of slow decode steps that also carried prefill tokens"),
    ]
    bigger = _rec("--max-num-batched-tokens", budget * 2, {"max_num_batched_tokens": budget * 2},
                  "prefills finish in fewer steps and admissions stop waiting for budget",
                  [("p99_ttft_ms", "down")])
    cap = max(config.block_size, budget // 4)
    smaller = _rec("--long-prefill-token-threshold", cap, {"long_prefill_token_threshold": cap},
                   "cap each prefill's chunk so decodes share steps with smaller prefills",
                   [("p99_itl_ms", "down")])
    recs = [smaller, bigger] if interference > blocked else [bigger, smaller]
    title = ("Prefill interference (ITL tail from large prefill steps)" if interference > blocked
             else "Token budget (max_num_batched_tokens)")
    return _verdict("token_budget", title, max(blocked, interference), evidence, recs, [
        "vllm:iteration_tokens_total: how often steps run at the budget",
        "p99 ITL against the step's prefill tokens (--enable-logging-iteration-details)"])


def _judge_floor(stats: dict[str, Any], config: EngineConfig,
                 hardware: Hardware) -> dict[str, Any] | None:
    floor = hardware.get("decode_floor_ms")
    median = stats.get("median_itl_ms")
    if not floor or not median:
        return None
    ratio = median / floor
    tail = stats.get("p99_itl_ms", median) / floor  # the tail too must sit at the floor
    closeness = min(max((FLOOR_FAR - tail) / (FLOOR_FAR - FLOOR_NEAR), 0.0), 1.0)
    score = closeness * (1.0 - stats.get("blocked_share", 0.0))
    evidence = [
        _ev("median_itl_ms", median, "median inter-token latency"),
        _ev("decode_floor_ms", floor, "one decode step at the roofline (reading the weights)"),
        _ev("itl_over_floor", ratio, "median ITL / floor: scheduling cannot go below 1.0"),
        _ev("p99_itl_over_floor", tail, "p99 ITL / floor"),
    ]
    recs = []
    if not config.quantization:
        recs.append(_rec("--quantization", "fp8", {"quantization": "fp8"},
                         "FP8 weights halve the bytes each decode step reads",
                         [("median_itl_ms", "down")]))
    tp = config.tensor_parallel_size * 2
    recs.append(_rec("--tensor-parallel-size", tp, {"tensor_parallel_size": tp},
                     "weights split over more GPUs: each reads fewer bytes a step",
                     [("median_itl_ms", "down")]))
    recs.append(_rec("--speculative-config", '{"method": "ngram", "num_speculative_tokens": 4}',
                     {}, "several tokens per weight read (not simulated by ServeScope)", []))
    return _verdict("decode_floor", "Decode floor (memory-bandwidth bound)", score, evidence,
                    recs, ["ITL at batch size 1 against the roofline floor",
                           "acceptance rate if you try speculative decoding"])


def _judge_memory(stats: dict[str, Any], config: EngineConfig,
                  hardware: Hardware) -> dict[str, Any]:
    fit = stats["kv_fit_requests"]
    score = (FIT_OK - fit) / (FIT_OK - FIT_LOW)
    evidence = [
        _ev("kv_capacity_tokens", stats["kv_capacity_tokens"], "tokens the KV cache holds"),
        _ev("mean_request_tokens", stats["mean_request_tokens"], "mean prompt + output"),
        _ev("kv_fit_requests", fit, "average requests that fit in the cache at once"),
    ]
    for key, text in (("weights_gib", "weights per GPU"), ("kv_gib", "KV cache per GPU")):
        if key in hardware:
            evidence.append(_ev(key, hardware[key], text))
    recs = [_rec("--tensor-parallel-size", config.tensor_parallel_size * 2,
                 {"tensor_parallel_size": config.tensor_parallel_size * 2},
                 "weights split over more GPUs leave more memory per GPU for KV",
                 [("output_throughput", "up")])]
    if config.kv_cache_dtype == "auto":
        recs.insert(0, _fp8_kv(stats, config, "FP8 KV doubles the tokens the cache holds",
                               [("output_throughput", "up")]))
    budget = config.max_num_batched_tokens
    if "weights_gib" in hardware and budget > 2048:
        recs.append(_rec("--max-num-batched-tokens", 2048, {"max_num_batched_tokens": 2048},
                         f"vLLM's profile run reserves activations for {budget} tokens; a "
                         "smaller budget leaves that memory to KV", [("output_throughput", "up")]))
    return _verdict("memory_fit", "Memory fit (weights leave little KV)", score, evidence, recs, [
        "the 'GPU KV cache size' and 'Maximum concurrency' lines at vLLM startup",
        "vllm:cache_config_info num_gpu_blocks"])


Judge = Callable[[dict[str, Any], EngineConfig, Hardware], dict[str, Any] | None]
# Each judge, and the measures it needs at least one of: without them it is not asked.
JUDGES: tuple[tuple[Judge, tuple[str, ...]], ...] = (
    (_judge_kv, ("blocked_kv_share", "num_preemptions")),
    (_judge_slots, ("blocked_slots_share",)),
    (_judge_budget, ("blocked_budget_share", "itl_tail_ratio")),
    (_judge_floor, ("median_itl_ms",)),
    (_judge_memory, ("kv_fit_requests",)))
