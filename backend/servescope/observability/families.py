"""vLLM's metric families for a set of engines at given playback positions, built with
prometheus-client: `GET /metrics` takes each session at its position, the OpenMetrics
export takes one run at every sampling time, stamped with simulated time. A fleet's replica
adds a `replica` label, last, to each of its samples (a single engine's stay as vLLM's); a P/D
pool's replica adds `pool` then `replica` (observability/pd.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.utils import floatToGoString

from servescope.observability import nixl as N
from servescope.observability import spec_decode as S
from servescope.observability import vllm_metrics as V
from servescope.observability.histogram_cursor import HistogramCursor
from servescope.observability.meter import Meter

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
    replica: int | None = None  # its index in a fleet of several; None: a single engine
    pool: str | None = None  # a P/D fleet's pool ("prefill" | "decode"); None: no P/D
    connector: N.ConnectorMeter | None = None  # a P/D engine's KV transfers; None: no connector
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
                config: dict[str, Any], max_model_len: int,
                replica: int | None = None, pool: str | None = None,
                connector: N.ConnectorMeter | None = None) -> EngineView:
    info = {"block_size": config.get("block_size"),
            "cache_dtype": config.get("kv_cache_dtype", "auto"),
            "enable_prefix_caching": config.get("enable_prefix_caching"),
            "gpu_memory_utilization": config.get("gpu_memory_utilization"),
            "num_gpu_blocks": config.get("num_gpu_blocks")}
    return EngineView((model_name, str(engine), session), meter, max_model_len,
                      {k: str(v) for k, v in info.items()}, S.num_speculative_tokens(config),
                      replica=replica, pool=pool, connector=connector)


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


def _at_s(view: EngineView, pos: int) -> float:
    """When record `pos` started: what the connector had reported by that step's schedule."""
    return view.meter.start_s[pos] if pos >= 0 else float("-inf")


def _nixl_histogram(spec: N.NixlHistogram) -> Filler:
    def fill(view: EngineView, pos: int, row: dict[str, float]) -> Rows:
        if view.connector is None:
            return []
        return [(list(view.labels), view.connector.histogram(spec, _at_s(view, pos)))]
    return fill


def _nixl_failed(view: EngineView, pos: int, row: dict[str, float]) -> Rows:
    if view.connector is None:
        return []
    return [(list(view.labels), (view.connector.num_failed(_at_s(view, pos)),))]


def _nixl_zero(view: EngineView, pos: int, row: dict[str, float]) -> Rows:
    return [] if view.connector is None else [(list(view.labels), (0.0,))]


class Family(NamedTuple):
    """One metric family: its prometheus-client type, name, help, label names (a replica's
    samples add `replica` after them) and how an engine's samples are filled."""

    kind: type[Metric]
    name: str
    doc: str
    labels: tuple[str, ...]
    fill: Filler

    def make(self) -> Metric:
        return self.kind(self.name, self.doc, labels=list(self.labels))  # type: ignore[call-arg]


def _spec_table(labels: tuple[str, ...]) -> list[Family]:
    table = [Family(CounterMetricFamily, c[0], c[1], labels, _spec_total(c[2]))
             for c in S.COUNTERS]
    table.append(Family(CounterMetricFamily, *S.PER_POS, (*labels, "position"), _spec_per_pos))
    return table


def _nixl_table(labels: tuple[str, ...]) -> list[Family]:
    table = [Family(HistogramMetricFamily, h.name, h.doc, labels, _nixl_histogram(h))
             for h in N.HISTOGRAMS]
    (failed, failed_doc), (notices, notices_doc) = N.COUNTERS
    return table + [Family(CounterMetricFamily, failed, failed_doc, labels, _nixl_failed),
                    Family(CounterMetricFamily, notices, notices_doc, labels, _nixl_zero)]


def _table() -> list[Family]:
    labels = V.LABELS
    table = [Family(GaugeMetricFamily, g.name, g.doc, labels, _column(g.column))
             for g in V.GAUGES]
    table += [Family(CounterMetricFamily, c.name, c.doc, labels, _column(c.column))
              for c in V.COUNTERS]
    table += [
        Family(CounterMetricFamily, V.REQUEST_SUCCESS, "Count of successfully processed "
               "requests.", (*labels, "finished_reason"), _success),
        Family(CounterMetricFamily, V.PROMPT_TOKENS_BY_SOURCE, "Number of prompt tokens by "
               "source.", (*labels, "source"), _by_source),
        Family(GaugeMetricFamily, V.WAITING_BY_REASON, "Number of requests waiting, by "
               "reason.", (*labels, "reason"), _waiting),
        Family(GaugeMetricFamily, V.SLEEP_STATE, "Engine sleep state; awake = 0 means "
               "engine is sleeping; awake = 1 means engine is awake; weights_offloaded = 1 "
               "means sleep level 1; discard_all = 1 means sleep level 2.",
               (*labels, "sleep_state"), _sleep_state),
        Family(GaugeMetricFamily, V.CACHE_CONFIG_INFO, "Information of the LLMEngine "
               "CacheConfig", (*CACHE_INFO_KEYS, "engine", "session"), _cache_info),
    ]
    table += [Family(HistogramMetricFamily, h.name, h.doc, labels, _histogram(h))
              for h in V.HISTOGRAMS]
    return table + _spec_table(labels) + _nixl_table(labels)


TABLE = _table()
# families shown only where an engine has series: the spec-decode counters and the connector's
# metrics, the table's tail
OPTIONAL = frozenset(range(len(TABLE) - len(S.COUNTERS) - 1 - len(N.HISTOGRAMS)
                           - len(N.COUNTERS), len(TABLE)))


def label_names(k: int, num_values: int) -> tuple[str, ...]:
    """The label names of a sample of family k with `num_values` label values: the family's,
    then `replica` when the sample has one more (a fleet's replica), `pool` and `replica` when
    it has two (a P/D pool's replica)."""
    names = TABLE[k].labels
    extra = ((), (V.REPLICA,), (V.POOL, V.REPLICA))[num_values - len(names)]
    return (*names, *extra)


def engine_samples(view: EngineView, pos: int, only: Sequence[int] | None = None,
                   ) -> list[Sample]:
    """Every sample of one engine after record `pos`; computed whole before any is added,
    so an engine in a bad state adds nothing."""
    out: list[Sample] = []
    row = view.meter.row(pos)
    extra = [] if view.replica is None else [str(view.replica)]
    if view.pool is not None:
        extra = [view.pool, *extra]
    for k in (range(len(TABLE)) if only is None else only):
        out += [(k, [*labels, *extra], args) for labels, args in TABLE[k].fill(view, pos, row)]
    return out


class Families:
    """The families of one exposition, filled sample by sample."""

    def __init__(self, only: Sequence[int] | None = None) -> None:
        self.metrics = {k: TABLE[k].make() for k in (range(len(TABLE)) if only is None
                                                     else only)}

    def put(self, samples: Iterable[Sample], timestamp: float | None = None) -> None:
        for k, labels, args in samples:
            metric, base = self.metrics[k], len(TABLE[k].labels)
            first = len(metric.samples)
            metric.add_metric(labels[:base], *args, timestamp=timestamp)
            if len(labels) > base:  # a replica's: its label on each sample just added
                extra = dict(zip(label_names(k, len(labels))[base:], labels[base:],
                                 strict=True))
                for sample in metric.samples[first:]:  # (each has a label dict of its own)
                    sample.labels.update(extra)

    def __iter__(self) -> Iterator[Metric]:
        return iter([m for k, m in self.metrics.items() if m.samples or k not in OPTIONAL])
