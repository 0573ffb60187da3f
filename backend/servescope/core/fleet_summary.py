"""A fleet's summary: the vllm-bench keys over every replica's requests (the run lasting as
long as the slowest replica; speculative counters summed), one object per replica, and the
router's totals. One replica's fleet-wide keys are its engine's summary, key for key."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from servescope.core import metrics
from servescope.core.spec_metrics import SpecCounters


def merged(engines: Sequence[Any]) -> dict[str, Any]:
    """The vllm-bench keys over all the engines' requests, as one engine's summary()."""
    waste: Counter[str] = Counter()
    for engine in engines:
        waste.update(engine.waste_totals)
    first = engines[0]
    summary = metrics.summarize([r for e in engines for r in e.done_requests],
                                max(e.time_s for e in engines),
                                [r for e in engines for r in e.rejected], dict(waste),
                                first.config.frontend_overhead_ms or 0.0)
    if first.spec_counters is not None:  # every replica's verifies, summed
        counters = SpecCounters()
        for engine in engines:
            if engine.spec_counters is not None:
                counters.add(engine.spec_counters)
        sources = dict.fromkeys(e.acceptance_source for e in engines)
        summary.update(counters.summary(), acceptance_source="; ".join(sources))
    return summary


def replica_summary(replica: int, engine: Any, kv_usage_peak: float) -> dict[str, Any]:
    """One replica's object: its requests, prefix cache hits, KV peak (as scraped) and TTFT."""
    own = engine.summary()
    done = engine.done_requests
    prompt = sum(r.prompt_len for r in done)
    cached = sum(max(r.num_cached_tokens, 0) for r in done)
    return {"replica": replica, "completed": own["completed"], "failed": own["failed"],
            "prefix_cache_hit_rate": cached / prompt if prompt else 0.0,
            "kv_usage_peak": kv_usage_peak, "p99_ttft_ms": own["p99_ttft_ms"],
            "mean_ttft_ms": own["mean_ttft_ms"], "duration": own["duration"]}


def fleet_summary(engines: Sequence[Any], kv_usage_peak: Sequence[float],
                  router: dict[str, Any]) -> dict[str, Any]:
    summary = merged(engines)
    summary["replicas"] = [replica_summary(i, e, kv_usage_peak[i])
                           for i, e in enumerate(engines)]
    summary["router"] = router
    return summary
