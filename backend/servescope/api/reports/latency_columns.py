"""Latency percentiles of finished requests from DoneRequests' columns, without building a
request's metrics one by one (api/reports/done_requests.py's `metrics()`), so that a window of a
200,000-request run takes well under a second (bench/window_percentiles.py). Each value is the
float core.metrics.request_metrics computes, by the same operations; ITL is the one latency with
a value a token: its intervals are counted per engine step instead of listed.

    a request's tokens come in runs of consecutive iterations [first, first + count):
    within a run each interval is one step's duration, ends[i] - ends[i - 1] (weighted by how
    many selected requests sampled at both i - 1 and i); between two runs, one gap value.
"""

from __future__ import annotations

import numpy as np

from servescope.api.reports.done_requests import DoneRequests


class LatencyColumns:
    """Per-request TTFT, TPOT, E2E (ms, nan where request_metrics gives None) and finish
    (s, as the percentile panel reads it: arrival + E2E)."""

    def __init__(self, done: DoneRequests) -> None:
        self.done = done
        arrival, finish = done.times[:, 0], done.times[:, 2]
        offsets, runs, ends = done.stretch_offsets, done.runs, done.step_end_s
        has_token = offsets[1:] > offsets[:-1]
        first_iter = runs[np.minimum(offsets[:-1], max(len(runs) - 1, 0)), 0] if len(runs) \
            else np.zeros(len(arrival), np.int64)
        first = np.where(has_token, ends[first_iter] if len(ends) else np.nan, np.nan)
        frontend = done.frontend_ms
        self.ttft_ms = (first - arrival) * 1000.0 + frontend
        self.e2el_ms = (finish - arrival) * 1000.0 + frontend
        num_tokens = np.add.reduceat(runs[:, 1], offsets[:-1]) if len(runs) else \
            np.zeros(len(arrival), np.int64)
        num_tokens = np.where(has_token, num_tokens, 0)
        many = num_tokens > 1
        self.tpot_ms = np.full(len(arrival), np.nan)
        self.tpot_ms[many] = (self.e2el_ms[many] - self.ttft_ms[many]) / (num_tokens[many] - 1)
        self.finish_s = arrival + np.where(np.isnan(self.e2el_ms), 0.0, self.e2el_ms) / 1000.0

    def itl(self, selected: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The selected requests' inter-token intervals (ms) as (values, counts)."""
        done = self.done
        ends, runs, offsets = done.step_end_s, done.runs, done.stretch_offsets
        rows = np.flatnonzero(selected)
        lo, length = offsets[rows], offsets[rows + 1] - offsets[rows]
        # the selected requests' runs, in order: run j of request k is runs[lo[k] + j]
        shift = np.repeat(lo - (np.cumsum(length) - length), length)
        mine = runs[np.arange(int(length.sum())) + shift].reshape(-1, 2)
        # within runs: step i's interval counts once per run covering i - 1 and i
        size = len(ends) + 1
        weight = (np.bincount(mine[:, 0] + 1, minlength=size)
                  - np.bincount(mine[:, 0] + mine[:, 1], minlength=size))
        per_step = np.cumsum(weight)[:len(ends)]
        steps = np.flatnonzero(per_step[1:] > 0) + 1
        values = [(ends[steps] - ends[steps - 1]) * 1000.0]
        counts = [per_step[steps]]
        # between a request's consecutive runs: the gap from one run's last token to the next's
        run_request = np.repeat(np.arange(len(rows)), length)
        same = run_request[1:] == run_request[:-1]
        last = mine[:-1, 0] + mine[:-1, 1] - 1
        values.append((ends[mine[1:, 0][same]] - ends[last[same]]) * 1000.0)
        counts.append(np.ones(int(same.sum()), np.int64))
        return np.concatenate(values), np.concatenate(counts)


BUCKET_SHIFT = 48  # a float's sign, exponent and 4 mantissa bits: 16 buckets an octave


def weighted_percentiles(values: np.ndarray, counts: np.ndarray,
                         qs: tuple[float, ...]) -> list[float | None]:
    """np.percentile(q) for each q of each value (>= 0) repeated its count, by numpy's own steps
    for its default (linear) method: index (n - 1) * q / 100 and its _lerp between the two
    values there."""
    total = int(counts.sum())
    if total == 0:
        return [None] * len(qs)
    out: list[float | None] = []
    for q in qs:
        virtual = (total - 1) * (q / 100.0)
        below = int(np.floor(virtual))
        t = virtual - below
        a, b = ranked(values, counts, (below, min(below + 1, total - 1)))
        diff = b - a
        out.append(b - diff * (1 - t) if t >= 0.5 else a + diff * t)
    return out


def ranked(values: np.ndarray, counts: np.ndarray, ranks: tuple[int, ...]) -> list[float]:
    """The values at these 0-based ranks of the repeated sample, without sorting it all: a
    non-negative float's bits order as an int64 does, so the rank's bucket of leading bits is
    found by counting, and only that bucket is sorted."""
    bucket = values.view(np.int64) >> BUCKET_SHIFT
    below = np.cumsum(np.bincount(bucket, weights=counts))  # exact: counts are far below 2**53
    out = []
    for rank in ranks:
        b = int(np.searchsorted(below, rank, side="right"))
        inside = bucket == b
        pairs = np.empty(int(inside.sum()), np.complex128)  # sorted with their counts at once
        pairs.real, pairs.imag = values[inside], counts[inside]
        pairs.sort()
        before = int(below[b - 1]) if b else 0
        at = np.searchsorted(np.cumsum(pairs.imag.astype(np.int64)), rank - before, side="right")
        out.append(float(pairs.real[at]))
    return out
