"""vLLM's metric families for a set of engines at given playback positions, built with
prometheus-client: `GET /metrics` takes each session at its position, the OpenMetrics
export takes one run at every sampling time, stamped with simulated time."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.utils import floatToGoString

from servescope.observability import spec_decode as S
from servescope.observability import vllm_metrics as V
from servescope.observability.meter import HistogramCursor, Meter

CACHE_INFO_KEYS = ("block_size", "cache_dtype", "enable_prefix_caching",
                   "gpu_memory_utilization", "num_gpu_blocks")


@dataclass
class EngineView:
    """One engine of a session or of an exported run: its labels, meter and cursors."""

    labels: tuple[str, str, str]  # model_name, engine, session
    meter: Meter
    max_model_len: int
    cache_info: dict[str, str]
    num_speculative_tokens: int = 0  # K; 0: the engine does not speculate
    cursors: dict[str, HistogramCursor] = field(default_factory=dict)
    les: dict[str, list[str]] = field(default_factory=dict)  # each histogram's `le` values

    def histogram(self, spec: V.Histogram, pos: int) -> tuple[list[tuple[str, float]], float]:
        cursor = self.cursors.get(spec.name)
        if cursor is None:
            buckets = spec.buckets or V.build_1_2_5_buckets(self.max_model_len)
            cursor = self.cursors[spec.name] = HistogramCursor(
                self.meter, spec.observations, buckets)
            self.les[spec.name] = [floatToGoString(b) for b in buckets] + ["+Inf"]
        counts, total, _ = cursor.at(pos)
        return list(zip(self.les[spec.name], counts, strict=True)), total


def model_name(config: dict[str, Any]) -> str:
    """vLLM's served_model_name defaults to the --model it serves."""
    return str(config.get("model") or "unknown")


def max_model_len(config: dict[str, Any], requests: Sequence[dict[str, Any]]) -> int:
    """The config's, else the longest request (what the pool was sized to hold)."""
    if config.get("max_model_len"):
        return int(config["max_model_len"])
    return max((r["prompt_len"] + r["output_len"] for r in requests), default=1)


def engine_view(meter: Meter, model_name: str, engine: int, session: str,
                config: dict[str, Any], max_model_len: int) -> EngineView:
    info = {"block_size": config.get("block_size"),
            "cache_dtype": config.get("kv_cache_dtype", "auto"),
            "enable_prefix_caching": config.get("enable_prefix_caching"),
            "gpu_memory_utilization": config.get("gpu_memory_utilization"),
            "num_gpu_blocks": config.get("num_gpu_blocks")}
    return EngineView((model_name, str(engine), session), meter, max_model_len,
                      {k: str(v) for k, v in info.items()}, S.num_speculative_tokens(config))


Sample = tuple[int, list[str], tuple[Any, ...]]  # (family index, label values, add args)
Rows = list[tuple[list[str], tuple[Any, ...]]]
Filler = Callable[[EngineView, int, dict[str, float]], Rows]  # (view, position, meter row)


def _column(column: str | None) -> Filler:
    if column is None:
        return lambda view, pos, row: [(list(view.labels), (0.0,))]
    return lambda view, pos, row: [(list(view.labels), (row[column],))]


def _histogram(spec: V.Histogram) -> Filler:
    return lambda view, pos, row: [(list(view.labels), view.histogram(spec, pos))]


def _success(view: EngineView, pos: int, row: dict[str, float]) -> Rows:
    done = row["request_success"]
    return [([*view.labels, reason], (done if reason == V.FINISHED_REASON else 0.0,))
            for reason in V.FINISHED_REASONS]


def _by_source(view: EngineView, pos: int, row: dict[str, float]) -> Rows:
    return [([*view.labels, source], (row[column] if column else 0.0,))
            for source, column in V.PROMPT_SOURCES]


def _waiting(view: EngineView, pos: int, row: dict[str, float]) -> Rows:
    # No LoRA budget or KV transfer holds a request back here: every wait is for capacity.
    waiting = row["num_requests_waiting"]
    return [([*view.labels, "capacity"], (waiting,)), ([*view.labels, "deferred"], (0.0,))]


def _sleep_state(view: EngineView, pos: int, row: dict[str, float]) -> Rows:
    return [([*view.labels, state], (1.0 if state == "awake" else 0.0,))
            for state in V.SLEEP_STATES]


def _cache_info(view: EngineView, pos: int, row: dict[str, float]) -> Rows:
    return [([*(view.cache_info[k] for k in CACHE_INFO_KEYS), view.labels[1], view.labels[2]],
             (1.0,))]


def _spec_total(name: str) -> Filler:
    """A spec-decode counter: only an engine that speculates has the series (vLLM registers
    SpecDecodingProm's counters only with a speculative_config)."""
    def fill(view: EngineView, pos: int, row: dict[str, float]) -> Rows:
        if not view.num_speculative_tokens:
            return []
        return [(list(view.labels), (view.meter.spec_decode.at(pos)[name],))]
    return fill


def _spec_per_pos(view: EngineView, pos: int, row: dict[str, float]) -> Rows:
    return [([*view.labels, str(k)], (view.meter.spec_decode.accepted_at(k, pos),))
            for k in range(view.num_speculative_tokens)]


def _spec_table(labels: list[str]) -> list[tuple[Callable[[], Metric], Filler]]:
    table: list[tuple[Callable[[], Metric], Filler]] = [
        (lambda c=c: CounterMetricFamily(c[0], c[1], labels=labels), _spec_total(c[2]))
        for c in S.COUNTERS]
    table.append((lambda: CounterMetricFamily(*S.PER_POS, labels=[*labels, "position"]),
                  _spec_per_pos))
    return table


def _table() -> list[tuple[Callable[[], Metric], Filler]]:
    labels = list(V.LABELS)
    table: list[tuple[Callable[[], Metric], Filler]] = []
    for g in V.GAUGES:
        table.append((lambda g=g: GaugeMetricFamily(g.name, g.doc, labels=labels),
                      _column(g.column)))
    for c in V.COUNTERS:
        table.append((lambda c=c: CounterMetricFamily(c.name, c.doc, labels=labels),
                      _column(c.column)))
    table += [
        (lambda: CounterMetricFamily(V.REQUEST_SUCCESS, "Count of successfully processed "
                                     "requests.", labels=[*labels, "finished_reason"]),
         _success),
        (lambda: CounterMetricFamily(V.PROMPT_TOKENS_BY_SOURCE, "Number of prompt tokens by "
                                     "source.", labels=[*labels, "source"]), _by_source),
        (lambda: GaugeMetricFamily(V.WAITING_BY_REASON, "Number of requests waiting, by "
                                   "reason.", labels=[*labels, "reason"]), _waiting),
        (lambda: GaugeMetricFamily(V.SLEEP_STATE, "Engine sleep state; awake = 0 means "
                                   "engine is sleeping; awake = 1 means engine is awake; "
                                   "weights_offloaded = 1 means sleep level 1; discard_all = "
                                   "1 means sleep level 2.", labels=[*labels, "sleep_state"]),
         _sleep_state),
        (lambda: GaugeMetricFamily(V.CACHE_CONFIG_INFO, "Information of the LLMEngine "
                                   "CacheConfig", labels=[*CACHE_INFO_KEYS, "engine",
                                                          "session"]), _cache_info),
    ]
    for h in V.HISTOGRAMS:
        table.append((lambda h=h: HistogramMetricFamily(h.name, h.doc, labels=labels),
                      _histogram(h)))
    return table + _spec_table(labels)


TABLE = _table()
# families shown only where an engine has series (the spec-decode counters, the table's tail)
OPTIONAL = frozenset(range(len(TABLE) - len(S.COUNTERS) - 1, len(TABLE)))


def engine_samples(view: EngineView, pos: int, only: Sequence[int] | None = None,
                   ) -> list[Sample]:
    """Every sample of one engine after record `pos`; computed whole before any is added,
    so an engine in a bad state adds nothing."""
    out: list[Sample] = []
    row = view.meter.row(pos)
    for k in (range(len(TABLE)) if only is None else only):
        out += [(k, labels, args) for labels, args in TABLE[k][1](view, pos, row)]
    return out


class Families:
    """The families of one exposition, filled sample by sample."""

    def __init__(self, only: Sequence[int] | None = None) -> None:
        self.metrics = {k: TABLE[k][0]() for k in (range(len(TABLE)) if only is None
                                                   else only)}

    def put(self, samples: Iterable[Sample], timestamp: float | None = None) -> None:
        for k, labels, args in samples:
            self.metrics[k].add_metric(labels, *args, timestamp=timestamp)

    def __iter__(self) -> Iterable[Metric]:
        return iter([m for k, m in self.metrics.items() if m.samples or k not in OPTIONAL])
