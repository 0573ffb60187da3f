"""A live engine's latency histograms, in simulated seconds, observed as vLLM 0.33 observes them
(vllm/v1/metrics/stats.py): time to first token once a request, when its first tokens come out
(IterationStats.update_from_output: since its arrival); inter-token latency once a later step
that gives it tokens (since its previous such step, however many tokens the step gave); end to
end when it finishes (update_from_finished_request: since its arrival). Names and buckets are
vLLM's (observability/vllm_metrics.py). Cumulative only: a live server keeps no per-step history."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

from prometheus_client.core import HistogramMetricFamily

from servescope.observability import vllm_metrics as V

# observations -> vLLM's histogram (name, help text, buckets), as vllm_metrics.py writes it
FAMILIES = {spec.observations: spec for spec in V.HISTOGRAMS
            if spec.observations in ("time_to_first_token", "inter_token_latency",
                                     "e2e_request_latency")}


class BucketCounts:
    """Counts per bucket (a value on a bucket's bound falls in it, as Prometheus' `le`)."""

    def __init__(self, buckets: Sequence[float]) -> None:
        self.buckets = tuple(buckets)
        self.counts = [0] * (len(self.buckets) + 1)  # the last: above every bound (+Inf)
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.buckets, value)] += 1
        self.sum += value

    def cumulative(self) -> list[tuple[str, float]]:
        out, seen = [], 0
        for bound, count in zip((*map(str, self.buckets), "+Inf"), self.counts, strict=True):
            seen += count
            out.append((bound, float(seen)))
        return out


class Latencies:
    """One engine's three histograms."""

    def __init__(self) -> None:
        self.histograms = {name: BucketCounts(spec.buckets or ())
                           for name, spec in FAMILIES.items()}

    def observe(self, arrival_s: float, last_token_s: float | None, end_s: float,
                done: bool) -> None:
        """A step ending at `end_s` gave a request (arrived at `arrival_s`, its previous tokens
        at `last_token_s`, None before its first) tokens; `done`: its last."""
        if last_token_s is None:
            self.histograms["time_to_first_token"].observe(end_s - arrival_s)
        else:
            self.histograms["inter_token_latency"].observe(end_s - last_token_s)
        if done:
            self.histograms["e2e_request_latency"].observe(end_s - arrival_s)


def families(engines: Sequence[tuple[list[str], Latencies]],
             label_names: list[str]) -> list[HistogramMetricFamily]:
    """The three families over `engines` (each its label values and its latencies)."""
    out = []
    for name, spec in FAMILIES.items():
        family = HistogramMetricFamily(spec.name, spec.doc, labels=label_names)
        for values, latencies in engines:
            histogram = latencies.histograms[name]
            family.add_metric(values, histogram.cumulative(), histogram.sum)
        out.append(family)
    return out
