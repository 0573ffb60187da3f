"""Data parallelism: `data_parallel_size` engine replicas, each a full TP group with its own KV
pool, fed round-robin in arrival order (vLLM's API server balances DP ranks by load; for
steady traffic of similar requests round-robin spreads them the same way)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

from servescope.core import metrics
from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.records import StepRecord
from servescope.core.request import RequestSpec
from servescope.core.spec_metrics import SpecCounters
from servescope.core.step_time import StepTimeFn


def split(specs: Sequence[RequestSpec], num_replicas: int) -> list[list[RequestSpec]]:
    ordered = sorted(specs, key=lambda s: (s.arrival_s or 0.0, s.arrival_step or 0))
    return [ordered[i::num_replicas] for i in range(num_replicas)]


class Replicas:
    """One Engine per DP rank. `run()` yields rank 0's step records (what a view shows) after
    running the other ranks; `summary()` covers every request of every rank. With
    `records=False` no rank makes records (run each one's run_to_end())."""

    def __init__(self, config: EngineConfig, specs: Sequence[RequestSpec],
                 step_time: StepTimeFn | None = None, records: bool = True) -> None:
        self.config = config
        self.engines = [Engine(config, part, step_time, records=records and rank == 0)
                        for rank, part in enumerate(split(specs, config.data_parallel_size))]

    def run(self) -> Iterator[StepRecord]:
        for engine in self.engines[1:]:
            engine.run_to_end()
        yield from self.engines[0].run()

    @property
    def done_requests(self) -> list[Any]:
        return [r for e in self.engines for r in e.done_requests]

    def summary(self) -> dict[str, Any]:
        waste: Counter[str] = Counter()
        for engine in self.engines:
            waste.update(engine.waste_totals)
        summary = metrics.summarize(self.done_requests, max(e.time_s for e in self.engines),
                                    [r for e in self.engines for r in e.rejected], dict(waste),
                                    self.config.frontend_overhead_ms or 0.0)
        summary["data_parallel_size"] = len(self.engines)
        if self.engines[0].spec_counters is not None:  # every rank's verifies, summed
            counters = SpecCounters()
            for engine in self.engines:
                if engine.spec_counters is not None:
                    counters.add(engine.spec_counters)
            sources = dict.fromkeys(e.acceptance_source for e in self.engines)
            summary.update(counters.summary(), acceptance_source="; ".join(sources))
        return summary
