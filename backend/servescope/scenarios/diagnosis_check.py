"""Run, diagnose, and check each recommended knob by re-simulating the run with the knob changed.

Knobs that only act through model and GPU (tensor parallelism, weight quantization, memory
utilization) can be checked only when the cost model prices the run; otherwise they are
reported as unchecked, with the reason.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from servescope.core.config import EngineConfig
from servescope.core.diagnose import diagnose
from servescope.core.diagnose_burst import prefill_tokens_per_s
from servescope.core.engine import Engine
from servescope.core.records import StepRecord
from servescope.core.request import RequestSpec
from servescope.core.step_time import StepTimeFn, placeholder_step_time_ms
from servescope.scenarios.knob_outcome import outcome

HARDWARE_FIELDS = {"tensor_parallel_size", "quantization", "gpu_memory_utilization",
                   "kv_cache_dtype", "dtype"}


def _cost_model() -> Any | None:
    try:
        return importlib.import_module("servescope.core.cost_model")
    except ImportError:
        return None


def priced(config: EngineConfig) -> bool:
    """Whether the cost model can price this config (it names a model and a GPU)."""
    return bool((config.model or config.model_config) and config.gpu
                and _cost_model() is not None)


def prepare(config: EngineConfig,
            step_time: StepTimeFn | None = None) -> tuple[EngineConfig, StepTimeFn | None]:
    """Fill num_gpu_blocks and the step-time function from the cost model where it applies."""
    if not priced(config):
        return config, step_time
    cost_model = _cost_model()
    if config.num_gpu_blocks is None:
        config = config.replace(num_gpu_blocks=int(cost_model.num_gpu_blocks(config)))
    if config.frontend_overhead_ms is None:
        config = config.replace(frontend_overhead_ms=cost_model.frontend_ms(config))
    return config, step_time or cost_model.make_step_time(config)


def simulate(config: EngineConfig, specs: Sequence[RequestSpec],
             step_time: StepTimeFn | None = None) -> tuple[list[StepRecord], dict[str, Any]]:
    engine = Engine(config, specs, step_time)
    records = list(engine.run())
    return records, engine.summary()


def simulated_summary(config: EngineConfig, specs: Sequence[RequestSpec],
                      step_time: StepTimeFn | None = None) -> dict[str, Any]:
    """The run's summary alone: no records are made."""
    engine = Engine(config, specs, step_time, records=False)
    engine.run_to_end()
    return engine.summary()


def hardware_numbers(config: EngineConfig, specs: Sequence[RequestSpec],
                     step_time: StepTimeFn | None) -> dict[str, float]:
    """decode_floor_ms: the step time of one lone decode at the mean prompt length, i.e. the
    floor no batching can beat (the roofline weight read under the cost model);
    prefill_tokens_per_s: prompt tokens a second in full-budget prefill steps."""
    fn = step_time or placeholder_step_time_ms
    context = int(np.mean([s.prompt_len for s in specs])) if specs else 0
    out = {"decode_floor_ms": float(fn(np.array([1]), np.array([context]))),
           "prefill_tokens_per_s": prefill_tokens_per_s(fn, config.max_num_batched_tokens)}
    cost_model = _cost_model()
    if priced(config):
        memory = cost_model.memory_breakdown(config)
        out.update({"weights_gib": float(memory["weights_gib"]),
                    "kv_gib": float(memory["kv_cache_gib"]),
                    "memory_gib": float(memory["total_gib"])})
    return out


def diagnose_run(config: EngineConfig, specs: Sequence[RequestSpec],
                 step_time: StepTimeFn | None = None, check: bool = True,
                 check_all: bool = False) -> dict[str, Any]:
    """Simulate, diagnose, and (when `check`) re-simulate the knobs of every verdict that is not
    minor (`check_all`: of every verdict)."""
    derived = config.num_gpu_blocks is None
    config, step_time = prepare(config, step_time)
    records, summary = simulate(config, specs, step_time)
    return diagnose_records(config, specs, records, summary, step_time, check, check_all,
                            derived)


def diagnose_records(config: EngineConfig, specs: Sequence[RequestSpec],
                     records: Iterable[StepRecord], summary: dict[str, Any],
                     step_time: StepTimeFn | None = None, check: bool = True,
                     check_all: bool = False, derived: bool = False) -> dict[str, Any]:
    """Diagnose a run already made (a server session's records, read once as they come); knobs
    are checked by re-simulating `specs` under `config` with each change. `derived`:
    num_gpu_blocks came from the cost model, so a change re-derives it."""
    diagnosis = diagnose(records, summary, config, hardware_numbers(config, specs, step_time),
                         specs)
    diagnosis["summary"] = summary
    runs: dict[str, dict[str, Any]] = {}  # a knob two verdicts recommend is simulated once
    for verdict in diagnosis["verdicts"] if check else ():
        if check_all or not verdict["minor"]:
            for rec in verdict["recommendations"]:
                rec["expected"] = check_recommendation(rec, config, specs, summary,
                                                       step_time, derived, runs)
    return diagnosis


def check_recommendation(rec: dict[str, Any], config: EngineConfig,
                         specs: Sequence[RequestSpec], before: dict[str, Any],
                         step_time: StepTimeFn | None, derived: bool,
                         runs: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """{checked, reason?} and, once checked, knob_outcome.outcome's {outcome, metrics,
    improved, worsened, text} with the config_change it ran. `runs`: summaries already
    simulated, by config change."""
    change = dict(rec["change"])
    if not change or not rec["targets"]:
        return {"checked": False, "reason": "this knob is not simulated"}
    hardware = set(change) & HARDWARE_FIELDS
    if hardware and "num_gpu_blocks" not in change and not priced(config):
        return {"checked": False,
                "reason": f"{', '.join(sorted(hardware))} acts through the cost model: name a "
                          "model and a GPU to check it"}
    if priced(config):
        if derived:
            change.pop("num_gpu_blocks", None)
            change["num_gpu_blocks"] = None
        new, new_time = prepare(config.replace(**change))
    else:
        new, new_time = config.replace(**change), step_time
    key = repr(sorted(change.items()))
    runs = {} if runs is None else runs
    if key not in runs:
        runs[key] = simulated_summary(new, specs, new_time)
    after = runs[key]
    return {"checked": True, **outcome(before, after, rec["targets"]),
            "config_change": {k: v for k, v in change.items() if v is not None}}
