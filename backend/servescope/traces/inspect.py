"""A bounded-memory summary of a trace: counts, arrival span and rate, length percentiles (from a
reservoir sample), prefix sharing, or for step traces the step count, time span and KV usage."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from servescope.core.records import StepRecord
from servescope.core.request import RequestSpec

SAMPLE = 100_000  # lengths kept for percentiles


class _Lengths:
    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.values = np.zeros(SAMPLE, dtype=np.int64)
        self.count = 0
        self.total = 0
        self.max = 0

    def add(self, value: int) -> None:
        if self.count < SAMPLE:
            self.values[self.count] = value
        elif (j := int(self.rng.integers(self.count + 1))) < SAMPLE:
            self.values[j] = value
        self.count += 1
        self.total += value
        self.max = max(self.max, value)

    def summary(self) -> dict[str, float]:
        kept = self.values[:min(self.count, SAMPLE)]
        if not len(kept):
            return {}
        p50, p90, p99 = np.percentile(kept, [50, 90, 99])
        return {"mean": round(self.total / self.count, 2), "p50": float(p50),
                "p90": float(p90), "p99": float(p99), "max": self.max}


def summarize_requests(specs: Iterable[RequestSpec], seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    prompts, outputs = _Lengths(rng), _Lengths(rng)
    first = last = None
    with_prefix = 0
    with_measured = 0
    for spec in specs:
        prompts.add(spec.prompt_len)
        outputs.add(spec.output_len)
        with_prefix += bool(spec.prefix)
        with_measured += spec.measured is not None
        t = spec.arrival_s if spec.arrival_s is not None else spec.arrival_step
        if t is not None:
            first = t if first is None else min(first, t)
            last = t if last is None else max(last, t)
    span = (last - first) if first is not None and last is not None else 0.0
    return {
        "num_requests": prompts.count,
        "arrival_span": span,
        "mean_rate_per_unit": round(prompts.count / span, 4) if span else None,
        "prompt_len": prompts.summary(), "output_len": outputs.summary(),
        "total_prompt_tokens": prompts.total, "total_output_tokens": outputs.total,
        "requests_with_prefix": with_prefix, "requests_with_measurements": with_measured,
    }


def summarize_steps(records: Iterable[StepRecord]) -> dict[str, Any]:
    count = 0
    first_t = last_t = 0.0
    max_tokens = 0
    usage_sum = 0.0
    max_usage = 0.0
    preemptions = 0
    for record in records:
        if count == 0:
            first_t = record.time_s
        last_t = record.time_s + record.step_time_ms / 1000.0
        max_tokens = max(max_tokens, record.num_scheduled_tokens)
        usage_sum += record.kv_usage
        max_usage = max(max_usage, record.kv_usage)
        preemptions += len(record.preempted)
        count += 1
    return {
        "num_steps": count, "time_span_s": round(last_t - first_t, 6),
        "max_scheduled_tokens": max_tokens, "num_preemptions": preemptions,
        "mean_kv_usage": round(usage_sum / count, 4) if count else None,
        "max_kv_usage": round(max_usage, 4),
    }
