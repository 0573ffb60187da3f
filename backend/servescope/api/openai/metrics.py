"""A live engine's /metrics in vLLM's names (vllm/v1/metrics/loggers.py: the scheduler's
gauges, the token and request counters, the latency histograms of latency.py), each engine's
samples labelled as vLLM labels them (`engine`, `model_name`) plus a fleet's `replica`, and
ServeScope's clock lag."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from servescope.api.openai import latency
from servescope.api.openai.live import LiveEngine

LAG = "servescope:clock_lag_seconds"
STREAM_LAG = "servescope:stream_lag_seconds"
FINISH_REASONS = ("stop", "length", "abort")  # vLLM's finished_reason label values


class LiveCollector:
    """The metric families of `engines` (index k labelled replica="k" when `replicas`)."""

    def __init__(self, engines: Sequence[LiveEngine], model_name: str,
                 first_replica: int | None) -> None:
        self.engines, self.model_name, self.first_replica = engines, model_name, first_replica

    def collect(self) -> Iterable[Metric]:
        keys = ["engine", "model_name"] + ([] if self.first_replica is None else ["replica"])
        gauges, counters, lags = _families(keys)
        labelled = []
        for k, live in enumerate(self.engines):
            values = ["0", self.model_name]
            if self.first_replica is not None:
                values.append(str(self.first_replica + k))
            labelled.append((values, live.latencies))
            scheduler, pool = live.engine.scheduler, live.engine.kv.pool
            usable = pool.num_usable_blocks
            gauges["running"].add_metric(values, len(scheduler.running))
            gauges["waiting"].add_metric(values, len(scheduler.waiting))
            gauges["kv"].add_metric(values, 1.0 - live.engine.kv.num_free_blocks / usable
                                    if usable else 0.0)
            counters["prompt"].add_metric(values, live.num_prompt_tokens)
            counters["generation"].add_metric(values, live.num_generation_tokens)
            for reason in FINISH_REASONS:
                count = live.num_finished.get(reason, 0)
                if reason == "abort":
                    count = len(live.aborted)
                counters["success"].add_metric(values + [reason], count)
            gauges["lag"].add_metric(values, live.lag_s)
            lags.add_metric(values, live.lags.cumulative(), live.lags.sum)
        return [gauges["running"], gauges["waiting"], gauges["kv"], *counters.values(),
                gauges["lag"], lags, *latency.families(labelled, keys)]


def _families(keys: list[str]) -> tuple[dict[str, GaugeMetricFamily],
                                        dict[str, CounterMetricFamily], HistogramMetricFamily]:
    """The gauges, the counters and the stream lag histogram, labelled by `keys`."""
    gauges = {
        "running": GaugeMetricFamily("vllm:num_requests_running",
                                     "Number of requests in model execution batches.",
                                     labels=keys),
        "waiting": GaugeMetricFamily("vllm:num_requests_waiting",
                                     "Number of requests waiting to be processed.", labels=keys),
        "kv": GaugeMetricFamily("vllm:kv_cache_usage_perc",
                                "KV-cache usage. 1 means 100 percent usage.", labels=keys),
        "lag": GaugeMetricFamily(LAG, "Wall seconds the latest step's tokens went out after "
                                 "the simulated step ended (its latest stream's).", labels=keys),
    }
    counters = {
        "prompt": CounterMetricFamily("vllm:prompt_tokens", "Number of prefill tokens "
                                      "processed.", labels=keys),
        "generation": CounterMetricFamily("vllm:generation_tokens", "Number of generation "
                                          "tokens processed.", labels=keys),
        "success": CounterMetricFamily("vllm:request_success", "Count of successfully "
                                       "processed requests.", labels=keys + ["finished_reason"]),
    }
    lags = HistogramMetricFamily(STREAM_LAG, "Wall seconds a stream's tokens went out after "
                                 "their simulated step ended (once a stream a step).",
                                 labels=keys)
    return gauges, counters, lags


def exposition(collector: LiveCollector) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return generate_latest(registry)
