"""A whole run as an OpenMetrics backfill file: vLLM's metrics sampled every `interval_s` of
simulated time (and at the run's end), each sample stamped `epoch + simulated time`, for
`promtool tsdb create-blocks-from openmetrics`."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator

from prometheus_client.openmetrics.exposition import ALLOWUTF8, generate_latest
from prometheus_client.samples import Sample

from servescope.observability.families import TABLE, EngineView, Families, engine_samples

MEDIA_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"
MAX_SAMPLES = 200_000


class ExportError(ValueError):
    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


def sample_times(view: EngineView, interval_s: float) -> list[tuple[float, int]]:
    """(simulated time, last record started by then) on the grid 0, interval, ... and at the
    end of the last step, where every counter holds the run's totals."""
    meter = view.meter
    if meter.num_records == 0:
        return []
    if not interval_s > 0:
        raise ExportError("interval_s must be > 0", "interval_s")
    end = meter.last_end_s
    n = math.floor(end / interval_s) + 1
    if n > MAX_SAMPLES:
        raise ExportError(f"the run lasts {end:.1f} s: at most {MAX_SAMPLES} samples, so "
                          f"interval_s must be at least {end / MAX_SAMPLES:.3g}", "interval_s")
    out = [(k * interval_s, meter.index_at_time(k * interval_s)) for k in range(n)]
    if out[-1][0] < end:
        out.append((end, meter.num_records - 1))
    return out


def default_epoch(view: EngineView) -> float:
    """Simulated time zero such that the run ends now (Grafana's default range shows it)."""
    end = view.meter.last_end_s if view.meter.num_records else 0.0
    return round(time.time() - end, 3)


class _One:
    def __init__(self, families: Families) -> None:
        self.families = families

    def collect(self) -> Iterator[object]:
        return iter(self.families)


def openmetrics(view: EngineView, epoch_s: float, interval_s: float) -> Iterator[str]:
    """The file as text chunks, one metric family at a time (all its samples in time order).
    Bad options raise ExportError here, before the first chunk."""
    times = sample_times(view, interval_s)
    return _chunks(view, [(round(epoch_s + t, 3), pos) for t, pos in times])


def _chunks(view: EngineView, times: list[tuple[float, int]]) -> Iterator[str]:
    for k in range(len(TABLE)):
        families = Families(only=[k])
        for stamp, pos in times:
            families.put(engine_samples(view, pos, only=[k]), timestamp=stamp)
        for metric in families:  # OpenMetrics wants each series' points together, in order
            metric.samples.sort(key=_series)
        text = generate_latest(_One(families), escaping=ALLOWUTF8).decode()  # type: ignore[arg-type]
        yield text.removesuffix("# EOF\n")
    yield "# EOF\n"


def _series(sample: Sample) -> list[tuple[str, str]]:
    return sorted((k, v) for k, v in sample.labels.items() if k != "le")
