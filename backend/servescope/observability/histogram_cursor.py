"""A histogram read back at any playback position: the bucket counts, sum and count of one
histogram's observations (observability/meter.py) up to a record, moved by deltas."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from servescope.observability.meter import Meter


class HistogramCursor:
    """Bucket counts of one histogram's observations up to a record, moved by deltas in
    either direction (playback mostly moves forward a little between scrapes)."""

    def __init__(self, meter: Meter, name: str, buckets: Sequence[float]) -> None:
        self.observed = meter.histograms[name]
        self.buckets = np.asarray(buckets, np.float64)
        self.counts = np.zeros(len(self.buckets) + 1, np.int64)  # the last one is +Inf only
        self.sum = 0.0
        self.u = 0  # units (runs, or records) folded in
        self.k = 0  # observations folded in

    def at(self, pos: int) -> tuple[list[int], float, int]:
        """(cumulative count per bucket and +Inf, sum, count) after record `pos`. Folds the
        observations between the last position and this one with numpy, a few thousand runs
        at a time (the first scrape at the end of a 1M-request run meets 210M of them)."""
        u = self.observed.upto(pos)
        sign = 1 if u >= self.u else -1
        for values, counts in self.observed.between_arrays(min(u, self.u), max(u, self.u)):
            # Prometheus' le: the first bucket whose bound is >= the value
            np.add.at(self.counts, np.searchsorted(self.buckets, values, "left"), sign * counts)
            self.k += sign * int(counts.sum())
            # added one by one (a running sum: each add rounds as a loop's would), so the sum
            # is the same to the last bit as observing them one by one
            signed = np.repeat(values * sign, counts)
            if len(signed):
                signed[0] += self.sum
                self.sum = float(np.add.accumulate(signed)[-1])
        self.u = u
        k = self.k
        if k == 0:
            self.sum = 0.0
        return np.cumsum(self.counts).tolist(), self.sum, k
