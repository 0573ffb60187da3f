"""The engine's own limits judged from a run's measures (core/diagnose_evidence.py): KV
starvation, batch slots, token budget / prefill interference, decode floor, memory fit. Each
judge: (stats, config, hardware) -> a verdict (core/diagnose_verdict.py) or None."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from servescope.core.config import EngineConfig
from servescope.core.diagnose_verdict import ev, knob, num, verdict

FIT_LOW, FIT_OK = 4.0, 16.0  # average requests the KV cache holds: memory-bound .. comfortable
FLOOR_NEAR, FLOOR_FAR = 1.15, 2.0  # median ITL / decode floor: at the floor .. far above it
# The budget is tried a quarter as large: vLLM 0.33's own defaults step from 8,192 tokens (an
# API server on an H100-class GPU) to 2,048 (other GPUs), a factor of four.
BUDGET_DOWN = 4

Hardware = Mapping[str, float]  # decode_floor_ms, prefill_tokens_per_s; weights_gib, kv_gib, ...


def judge_kv(stats: dict[str, Any], config: EngineConfig, hardware: Hardware) -> dict[str, Any]:
    share = stats.get("blocked_kv_share", 0.0)
    per_request = stats.get("preemptions_per_request", 0.0)
    # A cache that holds few requests starves by construction: that is memory fit, not this.
    fit_factor = min(stats.get("kv_fit_requests", FIT_OK) / FIT_OK, 1.0)
    score = (share + min(per_request, 1.0)) * fit_factor
    preemptions = stats.get("num_preemptions", 0)
    evidence = [
        ev("num_preemptions", preemptions, "requests preempted (recompute)"),
        ev("blocked_kv_share", share, "share of steps where admission waited for KV blocks"),
        ev("kv_usage_p95", stats.get("kv_usage_p95"), "95th percentile of KV usage"),
    ]
    headline = (f"{preemptions} preemptions ({per_request:.2f} a request); admission waited "
                f"for KV blocks in {share:.0%} of steps")
    return verdict("kv_starvation", "KV-cache starvation", score, evidence,
                   _kv_recs(stats, config, hardware), [
                       "vllm:num_preemptions_total and vllm:kv_cache_usage_perc over time",
                       "vllm:num_requests_waiting while KV usage is near 1.0",
                       "the 'GPU KV cache size' line at startup (tokens the cache holds)"],
                   explains=("ttft", "tpot", "itl", "e2el"), headline=headline)


def fp8_kv(stats: dict[str, Any], config: EngineConfig, why: str,
           targets: list[tuple[str, str]]) -> dict[str, Any]:
    """--kv-cache-dtype fp8: half the bytes a token, twice the usable blocks (block 0 is null)."""
    blocks = config.num_gpu_blocks or stats.get("num_usable_blocks", 0) + 1
    return knob("--kv-cache-dtype", "fp8",
                {"kv_cache_dtype": "fp8", "num_gpu_blocks": 2 * (blocks - 1) + 1}, why, targets)


def _kv_recs(stats: dict[str, Any], config: EngineConfig,
             hardware: Hardware) -> list[dict[str, Any]]:
    recs = []
    if config.kv_cache_dtype == "auto":
        recs.append(fp8_kv(stats, config,
                           "FP8 KV halves bytes per token: twice the blocks in the same memory",
                           [("num_preemptions", "down"), ("p99_ttft_ms", "down")]))
    concurrency = int(stats.get("kv_fit_requests") or config.max_num_seqs // 2)
    seqs = max(1, min(config.max_num_seqs // 2, concurrency))
    if seqs < config.max_num_seqs:
        recs.append(knob("--max-num-seqs", seqs, {"max_num_seqs": seqs},
                         "admit no more requests than the cache holds, so fewer are preempted "
                         "and recomputed", [("num_preemptions", "down")]))
    if hardware.get("memory_gib") and config.gpu_memory_utilization < 0.95:
        recs.append(knob("--gpu-memory-utilization", 0.95, {"gpu_memory_utilization": 0.95},
                         "more of the GPU for KV blocks", [("num_preemptions", "down")]))
    return recs


def judge_slots(stats: dict[str, Any], config: EngineConfig,
                hardware: Hardware) -> dict[str, Any]:
    share = stats["blocked_slots_share"]
    seqs = config.max_num_seqs * 2
    fit = stats.get("kv_fit_requests")
    if fit:
        seqs = max(config.max_num_seqs + 1, min(seqs, int(fit)))
    evidence = [
        ev("blocked_slots_share", share, "share of steps where admission waited with "
           f"max_num_seqs={config.max_num_seqs} requests running and KV to spare"),
        ev("kv_usage_mean", stats.get("kv_usage_mean"), "mean KV usage"),
    ]
    recs = [knob("--max-num-seqs", seqs, {"max_num_seqs": seqs},
                 "more requests decode together while blocks are free",
                 [("p99_ttft_ms", "down"), ("output_throughput", "up")])]
    headline = (f"admission waited with all {config.max_num_seqs} slots (max_num_seqs) busy and "
                f"KV to spare in {share:.0%} of steps")
    return verdict("batch_slots", "Batch-slot limit (max_num_seqs)", share, evidence, recs, [
        "vllm:num_requests_running pinned at max_num_seqs while vllm:kv_cache_usage_perc < 0.9",
        "queue time (vllm bench serve queue_times) against TTFT"],
        explains=("ttft", "e2el"), headline=headline)


def judge_budget(stats: dict[str, Any], config: EngineConfig,
                 hardware: Hardware) -> dict[str, Any]:
    blocked = stats.get("blocked_budget_share", 0.0)
    ratio = stats.get("itl_tail_ratio", 1.0)
    mixed = stats.get("tail_steps_with_prefill_share", 0.0)
    interference = mixed * min(max((ratio - 1.0) / 2.0, 0.0), 1.0)
    budget = config.max_num_batched_tokens
    evidence = [
        ev("blocked_budget_share", blocked, f"share of steps where admission waited for the "
           f"{budget}-token budget"),
        ev("prefill_chunks_mean", stats.get("prefill_chunks_mean"), "steps per prefill"),
        ev("ttft_tail_ratio", stats.get("ttft_tail_ratio"), "p99 / median TTFT"),
        ev("itl_tail_ratio", ratio, "p99 / median ITL"),
        ev("tail_steps_with_prefill_share", mixed,
           "share of slow decode steps that also carried prefill tokens"),
    ]
    if interference > blocked:
        title = "Prefill interference (ITL tail from large prefill steps)"
        headline = (f"{mixed:.0%} of the slow decode steps also carried prefill tokens "
                    f"(mean {num(stats.get('prefill_tokens_in_tail_mean', 0.0))}); p99 ITL is "
                    f"{ratio:.1f}x the median")
        explains: tuple[str, ...] = ("itl", "tpot", "e2el")
    else:
        title = "Token budget (max_num_batched_tokens)"
        headline = (f"admission waited for the {budget}-token budget in {blocked:.0%} of steps; "
                    f"a prefill took {stats.get('prefill_chunks_mean', 0.0):.1f} steps")
        explains = ("ttft", "e2el")
    return verdict("token_budget", title, max(blocked, interference), evidence,
                   _budget_recs(config, itl_first=interference > blocked), [
                       "vllm:iteration_tokens_total: how often steps run at the budget",
                       "p99 ITL against the step's prefill tokens "
                       "(--enable-logging-iteration-details)"],
                   explains=explains, headline=headline)


def _budget_recs(config: EngineConfig, itl_first: bool) -> list[dict[str, Any]]:
    """The budget both ways (up for TTFT, down for ITL) and a cap on each prefill's chunk."""
    budget = config.max_num_batched_tokens
    up = knob("--max-num-batched-tokens", budget * 2, {"max_num_batched_tokens": budget * 2},
              "prefills finish in fewer steps and admissions stop waiting for budget",
              [("p99_ttft_ms", "down")])
    cap = max(config.block_size, budget // 4)
    capped = knob("--long-prefill-token-threshold", cap, {"long_prefill_token_threshold": cap},
                  "cap each prefill's chunk so decodes share steps with smaller prefills",
                  [("p99_itl_ms", "down")])
    # vLLM's SchedulerConfig refuses a budget below max_num_seqs (vllm/config/scheduler.py,
    # _verify_args); without chunked prefill a budget below a prompt cannot schedule it.
    low = max(budget // BUDGET_DOWN, config.max_num_seqs)
    down = [knob("--max-num-batched-tokens", low, {"max_num_batched_tokens": low},
                 "smaller prefill chunks: each decode step carries fewer prompt tokens",
                 [("p99_itl_ms", "down")])]
    if low >= budget or not config.enable_chunked_prefill:
        down = []
    return [*down, capped, up] if itl_first else [up, *down, capped]


def judge_floor(stats: dict[str, Any], config: EngineConfig,
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
        ev("median_itl_ms", median, "median inter-token latency"),
        ev("decode_floor_ms", floor, "one decode step at the roofline (reading the weights)"),
        ev("itl_over_floor", ratio, "median ITL / floor: scheduling cannot go below 1.0"),
        ev("p99_itl_over_floor", tail, "p99 ITL / floor"),
    ]
    recs = []
    if not config.quantization:
        recs.append(knob("--quantization", "fp8", {"quantization": "fp8"},
                         "FP8 weights halve the bytes each decode step reads",
                         [("median_itl_ms", "down")]))
    tp = config.tensor_parallel_size * 2
    recs.append(knob("--tensor-parallel-size", tp, {"tensor_parallel_size": tp},
                     "weights split over more GPUs: each reads fewer bytes a step",
                     [("median_itl_ms", "down")]))
    headline = (f"median ITL {num(median)} ms is {ratio:.2f}x the {num(floor)} ms decode floor "
                f"(p99 {tail:.2f}x)")
    return verdict("decode_floor", "Decode floor (memory-bandwidth bound)", score, evidence,
                   recs, ["ITL at batch size 1 against the roofline floor",
                          "acceptance rate if you try speculative decoding"],
                   explains=("itl", "tpot", "e2el"), headline=headline)


def judge_memory(stats: dict[str, Any], config: EngineConfig,
                 hardware: Hardware) -> dict[str, Any]:
    fit = stats["kv_fit_requests"]
    score = (FIT_OK - fit) / (FIT_OK - FIT_LOW)
    evidence = [
        ev("kv_capacity_tokens", stats["kv_capacity_tokens"], "tokens the KV cache holds"),
        ev("mean_request_tokens", stats["mean_request_tokens"], "mean prompt + output"),
        ev("kv_fit_requests", fit, "average requests that fit in the cache at once"),
    ]
    for key, text in (("weights_gib", "weights per GPU"), ("kv_gib", "KV cache per GPU")):
        if key in hardware:
            evidence.append(ev(key, hardware[key], text))
    recs = [knob("--tensor-parallel-size", config.tensor_parallel_size * 2,
                 {"tensor_parallel_size": config.tensor_parallel_size * 2},
                 "weights split over more GPUs leave more memory per GPU for KV",
                 [("output_throughput", "up")])]
    if config.kv_cache_dtype == "auto":
        recs.insert(0, fp8_kv(stats, config, "FP8 KV doubles the tokens the cache holds",
                              [("output_throughput", "up")]))
    budget = config.max_num_batched_tokens
    if "weights_gib" in hardware and budget > 2048:
        recs.append(knob("--max-num-batched-tokens", 2048, {"max_num_batched_tokens": 2048},
                         f"vLLM's profile run reserves activations for {budget} tokens; a "
                         "smaller budget leaves that memory to KV", [("output_throughput", "up")]))
    headline = (f"the KV cache holds {num(stats['kv_capacity_tokens'])} tokens: {fit:.1f} "
                f"requests of the mean {num(stats['mean_request_tokens'])} tokens")
    return verdict("memory_fit", "Memory fit (weights leave little KV)", score, evidence, recs, [
        "the 'GPU KV cache size' and 'Maximum concurrency' lines at vLLM startup",
        "vllm:cache_config_info num_gpu_blocks"], explains=("ttft", "e2el"), headline=headline)
