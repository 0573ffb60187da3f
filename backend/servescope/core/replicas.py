"""Data parallelism: `data_parallel_size` N is a fleet of N engine replicas (each a full TP
group with its own KV pool) behind vLLM 0.33's own data-parallel balancing
(core/routers/data_parallel.py, from DPLBAsyncMPClient.get_core_engine_for_request), seeing
the replicas as its DP coordinator publishes them, every 100 ms."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from servescope.core.config import EngineConfig
from servescope.core.fleet import Fleet
from servescope.core.request import RequestSpec
from servescope.core.routers.data_parallel import STATS_INTERVAL_MS, DataParallelRouter
from servescope.core.step_time import StepTimeFn


class DataParallel(Fleet):
    """A fleet of `config.data_parallel_size` replicas; its summary says how many."""

    def __init__(self, config: EngineConfig, specs: Sequence[RequestSpec],
                 step_time: StepTimeFn | None = None, records: bool = True) -> None:
        n = config.data_parallel_size
        super().__init__([config] * n, specs, DataParallelRouter(n, {}, 0, config.block_size),
                         [step_time] * n, records, STATS_INTERVAL_MS)

    def summary(self) -> dict[str, Any]:
        summary = super().summary()
        summary["data_parallel_size"] = len(self.engines)
        return summary
