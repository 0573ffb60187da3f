"""The lesson's exercises, run on the simulator: static against continuous batching, a
max_num_batched_tokens sweep, and the fragmentation exercise computed by the allocators.

Every mode of one exercise is priced by the same step-time function (the cost model when a model
and GPU are named, else the placeholder), so rankings come from scheduling, not from costs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.request import RequestSpec
from servescope.core.resolve import resolve_config
from servescope.core.step_time import StepTimeFn
from servescope.scenarios.diagnosis_check import prepare
from servescope.traces.synthetic import lesson_workload

# Without a cost model: about what Llama 3.1 8B in BF16 leaves for KV on one H100 at 0.9
# ((72 - 16) GB / 128 KiB per token = 427k tokens, 26.7k blocks of 16).
FALLBACK_BLOCKS = 26_000
METRICS = ("output_throughput", "mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms",
           "median_itl_ms", "p99_itl_ms", "num_preemptions", "duration")
MODES = (  # (mode, EngineConfig overrides): the lesson preset's variants are these (a test)
    ("naive", {"policy": "naive"}),
    ("static", {"policy": "static", "static_batch_size": 16, "static_window_s": 0.1}),
    ("continuous", {"policy": "vllm-v0", "enable_chunked_prefill": False}),
    ("continuous+chunked", {"policy": "vllm-v1"}),
)


def lesson_config(model: str | None = None, gpu: str | None = None,
                  **overrides: Any) -> EngineConfig:
    """vLLM 0.33 defaults for a >= 70 GiB GPU (API server), prefix caching off (no sharing),
    scheduled synchronously (the lesson's contrast policies have no async scheduler), resolved
    as every door resolves a config (core/resolve.py). TTFT and E2E are the engine's, without
    the API server's time per request (the same in every mode), as the explorer's sessions on
    the lesson presets give them."""
    base: dict[str, Any] = dict(max_num_batched_tokens=8192, max_num_seqs=1024,
                                enable_prefix_caching=False, max_model_len=8192 + 512,
                                model=model, gpu=gpu, async_scheduling=False,
                                frontend_overhead_ms=0.0)
    if not (model and gpu):
        base["num_gpu_blocks"] = FALLBACK_BLOCKS + 1
    base.update({k: v for k, v in overrides.items() if v is not None})
    return resolve_config(base).config


def _run(config: EngineConfig, specs: Sequence[RequestSpec],
         step_time: StepTimeFn | None) -> dict[str, Any]:
    config, step_time = prepare(config, step_time)
    engine = Engine(config, specs, step_time)
    max_running = 0
    for record in engine.run():
        max_running = max(max_running, len(record.running))
    summary = engine.summary()
    row = {k: summary.get(k) for k in METRICS}
    itls = [x for r in engine.request_metrics() for x in r["itl_ms"]]
    row["max_itl_ms"] = max(itls) if itls else None  # a V0 generation stall hides below p99
    row["max_running"] = max_running
    row.update({k: v for k, v in summary.items() if k.startswith("kv_")})
    return row


def _pricing(config: EngineConfig) -> str:
    priced = prepare(config)[1] is not None
    return (f"cost model: {config.model} on {config.gpu}" if priced
            else "placeholder step time (10 ms + 0.02 ms per token): NOT a cost model")


def static_vs_continuous(specs: Sequence[RequestSpec] | None = None,
                         base: EngineConfig | None = None,
                         step_time: StepTimeFn | None = None) -> dict[str, Any]:
    specs = list(specs) if specs is not None else lesson_workload()
    base = base or lesson_config()
    rows = [{"mode": mode, **_run(base.replace(**overrides), specs, step_time)}
            for mode, overrides in MODES]
    best = max(rows, key=lambda r: r["output_throughput"])["mode"]
    return {"exercise": "static-vs-continuous", "pricing": _pricing(base),
            "num_requests": len(specs), "rows": rows, "highest_throughput": best}


def budget_sweep(budgets: Sequence[int] = (256, 512, 1024, 2048, 4096, 8192, 16384),
                 specs: Sequence[RequestSpec] | None = None, base: EngineConfig | None = None,
                 step_time: StepTimeFn | None = None,
                 saturation: float = 0.95) -> dict[str, Any]:
    """One run per budget; throughput saturates at the smallest budget within `saturation`
    of the best."""
    specs = list(specs) if specs is not None else lesson_workload(num_requests=120,
                                                                  rate_per_s=60.0)
    base = base or lesson_config()
    rows = [{"max_num_batched_tokens": b,
             **_run(base.replace(max_num_batched_tokens=b), specs, step_time)} for b in budgets]
    best = max(r["output_throughput"] for r in rows)
    saturated = next(r["max_num_batched_tokens"] for r in rows
                     if r["output_throughput"] >= saturation * best)
    return {"exercise": "budget-sweep", "pricing": _pricing(base), "num_requests": len(specs),
            "rows": rows, "saturation_budget": saturated, "saturation_fraction": saturation}


def fragmentation_workload(num_requests: int = 1000, output_mean: float = 1500.0,
                           output_sd: float = 600.0, prompt_len: int = 256,
                           max_len: int = 8192, seed: int = 0) -> list[RequestSpec]:
    rng = np.random.default_rng(seed)
    outputs = np.clip(np.rint(rng.normal(output_mean, output_sd, num_requests)), 1,
                      max_len - prompt_len).astype(int)
    return [RequestSpec(f"r{i}", prompt_len, int(o), arrival_step=0)
            for i, o in enumerate(outputs)]


def fragmentation(specs: Sequence[RequestSpec] | None = None, reservation: int = 8192,
                  block_size: int = 16, memory_tokens: int = 64 * 8192,
                  step_time: StepTimeFn | None = None) -> dict[str, Any]:
    """Contiguous reservation of `reservation` tokens per request (Orca Max) against paged
    blocks, in the same KV memory; shares are the allocators' own Fig. 2 breakdown, averaged
    over steps."""
    specs = list(specs) if specs is not None else fragmentation_workload()
    blocks = memory_tokens // block_size + 1
    rows = []
    for allocator, label in (("max", f"contiguous {reservation}"),
                             ("paged", f"paged, {block_size}-token blocks")):
        config = EngineConfig.from_dict(dict(
            block_size=block_size, num_gpu_blocks=blocks, max_num_seqs=1024,
            max_num_batched_tokens=8192, enable_prefix_caching=False, allocator=allocator,
            max_model_len=reservation))
        rows.append({"allocator": allocator, "label": label,
                     **_run(config, specs, step_time)})
    lengths = np.array([s.prompt_len + s.output_len for s in specs])
    return {"exercise": "fragmentation", "num_requests": len(specs),
            "memory_tokens": memory_tokens, "mean_request_tokens": float(lengths.mean()),
            "rows": rows}
