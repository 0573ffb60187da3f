"""A whole run as an OpenMetrics backfill file: vLLM's metrics sampled every `interval_s` of
simulated time (and at the run's end), each sample stamped `epoch + simulated time`, for
`promtool tsdb create-blocks-from openmetrics`. A fleet's run writes every replica's series,
each with its `replica` label."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Sequence

from prometheus_client.openmetrics.exposition import ALLOWUTF8, generate_latest
from prometheus_client.samples import Sample

from servescope.observability.families import TABLE, EngineView, Families, engine_samples

MEDIA_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"
# sampling times x engines: a fleet's replicas each write at every time, so a fleet's file is
# held to the size one engine's was (the bound this export has had since it was written)
MAX_SAMPLES = 200_000


class ExportError(ValueError):
    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


def sample_times(views: Sequence[EngineView], interval_s: float,
                 ) -> list[tuple[float, list[int]]]:
    """(simulated time, each view's last record started by then) on the grid 0, interval, ...
    and at the end of the run's last step, where every counter holds the run's totals. The
    views are one engine, or a fleet's replicas sharing one clock."""
    if all(view.meter.num_records == 0 for view in views):
        return []
    if not interval_s > 0:
        raise ExportError("interval_s must be > 0", "interval_s")
    end = run_end_s(views)
    n = math.floor(end / interval_s) + 1
    per_time = len(views)
    if n * per_time > MAX_SAMPLES:
        engines = f" (sampling times x {per_time} replicas)" if per_time > 1 else ""
        raise ExportError(f"the run lasts {end:.1f} s: at most {MAX_SAMPLES} samples{engines}, "
                          f"so interval_s must be at least {end * per_time / MAX_SAMPLES:.3g}",
                          "interval_s")
    times = [k * interval_s for k in range(n)]
    if times[-1] < end:
        times.append(end)
    # a replica's records all start before the run's end: its last is its position there
    return [(t, [view.meter.index_at_time(t) for view in views]) for t in times]


def run_end_s(views: Sequence[EngineView]) -> float:
    return max((view.meter.last_end_s for view in views if view.meter.num_records),
               default=0.0)


def default_epoch(views: Sequence[EngineView]) -> float:
    """Simulated time zero such that the run ends now (Grafana's default range shows it)."""
    return round(time.time() - run_end_s(views), 3)


class _One:
    def __init__(self, families: Families) -> None:
        self.families = families

    def collect(self) -> Iterator[object]:
        return iter(self.families)


def openmetrics(views: Sequence[EngineView], epoch_s: float, interval_s: float,
                ) -> Iterator[str]:
    """The file as text chunks, one metric family at a time (all its samples in time order).
    Bad options raise ExportError here, before the first chunk."""
    times = sample_times(views, interval_s)
    return _chunks(views, [(round(epoch_s + t, 3), pos) for t, pos in times])


def _chunks(views: Sequence[EngineView], times: list[tuple[float, list[int]]],
            ) -> Iterator[str]:
    for k in range(len(TABLE)):
        families = Families(only=[k])
        for stamp, positions in times:
            for view, pos in zip(views, positions, strict=True):
                families.put(engine_samples(view, pos, only=[k]), timestamp=stamp)
        for metric in families:  # OpenMetrics wants each series' points together, in order
            metric.samples.sort(key=_series)
        text = generate_latest(_One(families), escaping=ALLOWUTF8).decode()  # type: ignore[arg-type]
        yield text.removesuffix("# EOF\n")
    yield "# EOF\n"


def _series(sample: Sample) -> list[tuple[str, str]]:
    return sorted((k, v) for k, v in sample.labels.items() if k != "le")
