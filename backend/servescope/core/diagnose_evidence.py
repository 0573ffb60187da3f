"""The numbers a diagnosis rests on, measured from a run's step records and summary.

A step whose waiting queue is non-empty after scheduling is "blocked", and charged to one cause:
  preempted this step, or KV usage high  -> kv      (no blocks for the head of the queue)
  running == max_num_seqs                -> slots   (batch-slot limit)
  scheduled tokens == token budget       -> budget  (token budget spent; or chunking off)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from servescope.core.config import EngineConfig
from servescope.core.records import StepRecord

KV_HIGH = 0.9  # KV usage above which a blocked admission is charged to blocks
ITL_TAIL_FACTOR = 1.5  # a decode step is in the ITL tail when it takes this x the median


def measure(records: Sequence[StepRecord], summary: Mapping[str, Any],
            config: EngineConfig) -> dict[str, Any]:
    """Plain-number evidence; keys absent when the records cannot give them."""
    stats: dict[str, Any] = {"num_steps": len(records)}
    if records:
        stats.update(_blocking(records, config))
        stats.update(_kv(records))
        stats.update(_prefill(records))
        stats.update(_decode_steps(records))
    stats.update(_capacity(records, summary, config))
    for key in ("p99_ttft_ms", "median_ttft_ms", "p99_itl_ms", "median_itl_ms"):
        if summary.get(key) is not None:
            stats[key] = float(summary[key])
    if stats.get("median_ttft_ms") and "p99_ttft_ms" in stats:
        stats["ttft_tail_ratio"] = stats["p99_ttft_ms"] / stats["median_ttft_ms"]
    if stats.get("median_itl_ms") and "p99_itl_ms" in stats:
        stats["itl_tail_ratio"] = stats["p99_itl_ms"] / stats["median_itl_ms"]
    if summary.get("num_preemptions") is not None:
        stats["num_preemptions"] = int(summary["num_preemptions"])
        stats["preemptions_per_request"] = stats["num_preemptions"] / max(
            int(summary.get("completed") or 0), 1)
    return stats


def _blocking(records: Sequence[StepRecord], config: EngineConfig) -> dict[str, Any]:
    counts = {"kv": 0, "slots": 0, "budget": 0, "other": 0}
    for r in records:
        if not r.waiting:
            continue
        if r.preempted or r.kv_usage >= KV_HIGH:
            counts["kv"] += 1
        elif len(r.running) >= r.max_num_seqs:
            counts["slots"] += 1
        elif r.num_scheduled_tokens >= r.token_budget or not config.enable_chunked_prefill:
            counts["budget"] += 1
        else:
            counts["other"] += 1
    n = len(records)
    out: dict[str, Any] = {f"blocked_{k}_steps": v for k, v in counts.items()}
    out.update({f"blocked_{k}_share": v / n for k, v in counts.items()})
    out["blocked_share"] = sum(counts.values()) / n
    out["steps_at_max_num_seqs_share"] = sum(
        len(r.running) >= r.max_num_seqs for r in records) / n
    return out


def _kv(records: Sequence[StepRecord]) -> dict[str, Any]:
    usage = np.fromiter((r.kv_usage for r in records), float, len(records))
    return {"kv_usage_mean": float(usage.mean()), "kv_usage_p95": float(np.percentile(usage, 95)),
            "kv_usage_max": float(usage.max()),
            "kv_full_share": float((usage >= 0.95).mean()),
            "num_usable_blocks": records[0].num_usable_blocks}


def _prefill(records: Sequence[StepRecord]) -> dict[str, Any]:
    chunks: dict[str, int] = {}
    budget_full = 0
    for r in records:
        for e in r.scheduled:
            if e.prefill:
                chunks[e.id] = chunks.get(e.id, 0) + 1
        budget_full += r.num_scheduled_tokens >= r.token_budget
    values = list(chunks.values()) or [0]
    return {"prefill_chunks_mean": float(np.mean(values)), "prefill_chunks_max": max(values),
            "budget_full_share": budget_full / len(records)}


def _decode_steps(records: Sequence[StepRecord]) -> dict[str, Any]:
    """Steps that carry decodes: how slow the slowest are, and whether prefills made them so."""
    times, prefill_tokens = [], []
    for r in records:
        if any(not e.prefill for e in r.scheduled):
            times.append(r.step_time_ms)
            prefill_tokens.append(sum(e.n for e in r.scheduled if e.prefill))
    if not times:
        return {}
    t = np.asarray(times)
    p = np.asarray(prefill_tokens)
    median = float(np.median(t))
    tail = t >= ITL_TAIL_FACTOR * median if median > 0 else np.zeros(len(t), bool)
    mixed = p > 0
    return {
        "decode_step_median_ms": median,
        "decode_step_p99_ms": float(np.percentile(t, 99)),
        "decode_step_tail_share": float(tail.mean()),
        "tail_steps_with_prefill_share": float(mixed[tail].mean()) if tail.any() else 0.0,
        "mixed_step_share": float(mixed.mean()),
        "prefill_tokens_in_tail_mean": float(p[tail].mean()) if tail.any() else 0.0,
    }


def _capacity(records: Sequence[StepRecord], summary: Mapping[str, Any],
              config: EngineConfig) -> dict[str, Any]:
    usable = records[0].num_usable_blocks if records else (
        config.num_gpu_blocks - 1 if config.num_gpu_blocks else None)
    completed = int(summary.get("completed") or 0)
    if usable is None or not completed or summary.get("total_input_tokens") is None:
        return {}
    tokens = int(summary["total_input_tokens"]) + int(summary.get("total_output_tokens") or 0)
    mean_len = tokens / completed
    kv_tokens = usable * config.block_size
    return {"kv_capacity_tokens": kv_tokens, "mean_request_tokens": mean_len,
            "kv_fit_requests": kv_tokens / mean_len}
