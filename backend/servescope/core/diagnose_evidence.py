"""The numbers a diagnosis rests on, measured from a run's step records and summary.

A step whose waiting queue is non-empty after scheduling is "blocked", and charged to one cause:
  preempted this step, or KV usage high  -> kv      (no blocks for the head of the queue)
  running == max_num_seqs                -> slots   (batch-slot limit)
  scheduled tokens == token budget       -> budget  (token budget spent; or chunking off)
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from servescope.core.config import EngineConfig
from servescope.core.records import StepRecord

KV_HIGH = 0.9  # KV usage above which a blocked admission is charged to blocks
ITL_TAIL_FACTOR = 1.5  # a decode step is in the ITL tail when it takes this x the median


def measure(records: Iterable[StepRecord], summary: Mapping[str, Any],
            config: EngineConfig) -> dict[str, Any]:
    """Plain-number evidence; keys absent when the records cannot give them. One pass over
    `records` (a stream: none is kept)."""
    steps = StepMeasures(config)
    for record in records:
        steps.add(record)
    stats = steps.stats()
    stats.update(_capacity(steps.num_usable_blocks, summary, config))
    for key in ("p99_ttft_ms", "median_ttft_ms", "p99_itl_ms", "median_itl_ms"):
        if summary.get(key) is not None:
            stats[key] = float(summary[key])
    if stats.get("median_ttft_ms") and "p99_ttft_ms" in stats:
        stats["ttft_tail_ratio"] = stats["p99_ttft_ms"] / stats["median_ttft_ms"]
    if stats.get("median_itl_ms") and "p99_itl_ms" in stats:
        stats["itl_tail_ratio"] = stats["p99_itl_ms"] / stats["median_itl_ms"]
    for key in ("acceptance_rate", "mean_acceptance_length"):  # speculative runs only
        if summary.get(key) is not None:
            stats[key] = float(summary[key])
    if summary.get("acceptance_rate_per_position"):
        stats["acceptance_rate_per_position"] = [
            float(a) for a in summary["acceptance_rate_per_position"]]
    if summary.get("num_preemptions") is not None:
        stats["num_preemptions"] = int(summary["num_preemptions"])
        stats["preemptions_per_request"] = stats["num_preemptions"] / max(
            int(summary.get("completed") or 0), 1)
    return stats


class StepMeasures:
    """The step records' evidence gathered one record at a time: counts, each request's prefill
    chunks, and the three numeric columns the percentiles need (8 bytes a step each)."""

    def __init__(self, config: EngineConfig) -> None:
        self.chunked_prefill = config.enable_chunked_prefill
        self.num_steps = 0
        self.blocked = {"kv": 0, "slots": 0, "budget": 0, "other": 0}
        self.at_max_num_seqs = 0
        self.budget_full = 0
        self.num_usable_blocks: int | None = None  # the first record's
        self.kv_usage = array("d")
        self.prefill_chunks: dict[str, int] = {}
        self.decode_step_ms = array("d")  # steps that carry decodes
        self.decode_step_prefill = array("q")  # and the prefill tokens they carry
        self.num_decodes = 0  # decoding requests summed over those steps, and their contexts
        self.decode_context_sum = 0

    def add(self, r: StepRecord) -> None:
        if self.num_usable_blocks is None:
            self.num_usable_blocks = r.num_usable_blocks
        self.num_steps += 1
        tokens = r.num_scheduled_tokens
        at_max = len(r.running) >= r.max_num_seqs
        self.at_max_num_seqs += at_max
        self.budget_full += tokens >= r.token_budget
        if r.waiting:
            self.blocked[self._cause(r, at_max, tokens)] += 1
        self.kv_usage.append(r.kv_usage)
        columns = r.columns
        prefill = columns.prefill.tolist()
        chunks = self.prefill_chunks
        for rid, is_prefill in zip(columns.ids, prefill, strict=True):
            if is_prefill:
                chunks[rid] = chunks.get(rid, 0) + 1
        if not all(prefill):
            self.decode_step_ms.append(r.step_time_ms)
            self.decode_step_prefill.append(int(columns.n[columns.prefill].sum()))
            decoding = ~columns.prefill
            self.num_decodes += int(decoding.sum())
            self.decode_context_sum += int(columns.start[decoding].sum())

    def _cause(self, r: StepRecord, at_max: bool, tokens: int) -> str:
        """Why admission waited in a step that left requests waiting."""
        if r.preempted or r.kv_usage >= KV_HIGH:
            return "kv"
        if at_max:
            return "slots"
        if tokens >= r.token_budget or not self.chunked_prefill:
            return "budget"
        return "other"

    def stats(self) -> dict[str, Any]:
        n = self.num_steps
        out: dict[str, Any] = {"num_steps": n}
        if not n:
            return out
        out.update({f"blocked_{k}_steps": v for k, v in self.blocked.items()})
        out.update({f"blocked_{k}_share": v / n for k, v in self.blocked.items()})
        out["blocked_share"] = sum(self.blocked.values()) / n
        out["steps_at_max_num_seqs_share"] = self.at_max_num_seqs / n
        usage = np.frombuffer(self.kv_usage)
        out.update({"kv_usage_mean": float(usage.mean()),
                    "kv_usage_p95": float(np.percentile(usage, 95)),
                    "kv_usage_max": float(usage.max()),
                    "kv_full_share": float((usage >= 0.95).mean()),
                    "num_usable_blocks": self.num_usable_blocks})
        values = list(self.prefill_chunks.values()) or [0]
        out.update({"prefill_chunks_mean": float(np.mean(values)),
                    "prefill_chunks_max": max(values), "budget_full_share": self.budget_full / n})
        if self.decode_step_ms:
            steps = len(self.decode_step_ms)
            out.update({"decode_batch_mean": self.num_decodes / steps,
                        "decode_context_mean": self.decode_context_sum / max(self.num_decodes, 1)})
        out.update(_decode_steps(np.frombuffer(self.decode_step_ms),
                                 np.frombuffer(self.decode_step_prefill, np.int64)))
        return out


def _decode_steps(t: np.ndarray, p: np.ndarray) -> dict[str, Any]:
    """Steps that carry decodes (their times `t`, their prefill tokens `p`): how slow the
    slowest are, and whether prefills made them so."""
    if not len(t):
        return {}
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


def _capacity(usable: int | None, summary: Mapping[str, Any],
              config: EngineConfig) -> dict[str, Any]:
    """`usable`: the first record's usable blocks (None: no records)."""
    if usable is None:
        usable = config.num_gpu_blocks - 1 if config.num_gpu_blocks else None
    completed = int(summary.get("completed") or 0)
    if usable is None or not completed or summary.get("total_input_tokens") is None:
        return {}
    tokens = int(summary["total_input_tokens"]) + int(summary.get("total_output_tokens") or 0)
    mean_len = tokens / completed
    kv_tokens = usable * config.block_size
    return {"kv_capacity_tokens": kv_tokens, "mean_request_tokens": mean_len,
            "kv_fit_requests": kv_tokens / mean_len}
