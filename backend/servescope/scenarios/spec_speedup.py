"""Speculation's speed-up on a run: the same workload re-simulated with speculation off
(K = 0), everything else equal, and the two summaries' ratios."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from servescope.core.config import EngineConfig
from servescope.core.replicas import DataParallel
from servescope.core.request import RequestSpec
from servescope.core.step_time import StepTimeFn
from servescope.scenarios.diagnosis_check import prepare, simulated_summary


def without_speculation(config: EngineConfig) -> EngineConfig:
    """The config with speculation off; the KV pool kept as the speculative run sized it."""
    return config.replace(speculative_config=None)


def speedup(config: EngineConfig, specs: Sequence[RequestSpec],
            summary: dict[str, Any]) -> dict[str, Any] | None:
    """Output tokens a second, and mean inter-token latency, of the speculative run over the
    run without speculation (above 1: speculation pays); None without speculation."""
    if config.speculative is None:
        return None
    base_config, step_time = prepare(without_speculation(config))
    base = _summary(base_config, specs, step_time)
    return {
        "output_throughput": _ratio(summary.get("output_throughput"),
                                    base.get("output_throughput")),
        "mean_itl": _ratio(base.get("mean_itl_ms"), summary.get("mean_itl_ms")),
        "baseline_output_throughput": base.get("output_throughput"),
        "baseline_mean_itl_ms": base.get("mean_itl_ms"),
    }


def _summary(config: EngineConfig, specs: Sequence[RequestSpec],
             step_time: StepTimeFn | None) -> dict[str, Any]:
    """The run's summary without records, over every data-parallel rank as the run had."""
    if config.data_parallel_size <= 1:
        return simulated_summary(config, specs, step_time)
    replicas = DataParallel(config, specs, step_time, records=False)
    replicas.run_to_end()
    return replicas.summary()


def _ratio(top: float | None, bottom: float | None) -> float | None:
    if not top or not bottom:
        return None
    return float(top) / float(bottom)


def speculation_line(config: EngineConfig, summary: dict[str, Any]) -> str:
    """One line for a person: the method, where acceptance came from, and what it gave."""
    spec = config.speculative
    assert spec is not None
    rate, length = summary.get("acceptance_rate"), summary.get("mean_acceptance_length")
    gain = summary.get("speedup") or {}
    parts = [f"speculative decoding: {spec.method}, num_speculative_tokens "
             f"{spec.num_speculative_tokens}; acceptance from {summary.get('acceptance_source')}",
             f"acceptance_rate {_num(rate)}, mean_acceptance_length {_num(length)}",
             f"speed-up against K = 0: output tok/s x{_num(gain.get('output_throughput'))}, "
             f"mean ITL x{_num(gain.get('mean_itl'))}"]
    return "; ".join(parts)


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"
