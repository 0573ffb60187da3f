"""llm-d's scorers: each gives every replica a score in [0, 1] (higher = preferred), and a
profile sums them with weights (llm-d-inference-scheduler, commit 520af478, under
pkg/epp/framework/plugins/scheduling/scorer/):

  queue-scorer                 queuedepth/queue.go: (max waiting - waiting) / (max - min)
                               of the scraped vllm:num_requests_waiting; all equal: 1
  kv-cache-utilization-scorer  kvcacheutilization/kvcache_utilization.go: 1 - KV usage
  active-request-scorer        activerequest/active_request.go: the requests the router has
                               in flight there; at most idleThreshold (0): 1, else
                               (max - count) / max * maxBusyScore (1)
  load-aware-scorer            loadaware/load_aware.go: no waiting request 0.5, else
                               0.5 * (1 - min(waiting, threshold) / threshold), threshold 128
  prefix-cache-scorer          prefix/plugin.go (and the precise scorer's absoluteScoredPods,
  precise-prefix-cache-scorer  preciseprefixcache/utils.go): matched blocks / prompt blocks
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from itertools import repeat
from operator import add, attrgetter, mul, sub
from typing import NamedTuple

from servescope.core.routers.base import ReplicaState

IDLE_THRESHOLD = 0  # active-request-scorer's idleThreshold default
MAX_BUSY_SCORE = 1.0  # and its maxBusyScore default
LOAD_AWARE_THRESHOLD = 128.0  # load-aware-scorer's threshold default


class View(NamedTuple):
    """What the scorers read for one request: the scraped replicas, the router's own
    in-flight counts, and each replica's matched prompt blocks out of `num_blocks` in the
    router's own index (`approx`) and by the replicas' KV events (`precise`). (A NamedTuple:
    one a request.)"""

    replicas: Sequence[ReplicaState]
    in_flight: Sequence[int]
    num_blocks: int
    approx: Sequence[int]
    precise: Sequence[int]


# (the per-scrape scorers read every replica at each scrape: their common cases at C speed)
def queue(view: View) -> list[float]:
    waiting = list(map(attrgetter("num_waiting"), view.replicas))
    low, high = min(waiting), max(waiting)
    if high == low:  # (most scrapes: nothing waits anywhere)
        return [1.0] * len(waiting)
    return [(high - w) / (high - low) for w in waiting]


def kv_utilization(view: View) -> list[float]:
    return list(map(sub, repeat(1.0), map(attrgetter("kv_usage"), view.replicas)))


def active_requests(view: View) -> list[float]:
    most = max(view.in_flight)
    return [1.0 if n <= IDLE_THRESHOLD else (most - n) / most * MAX_BUSY_SCORE
            for n in view.in_flight]


def load_aware(view: View) -> list[float]:
    return [0.5 if not r.num_waiting
            else 0.5 * (1.0 - min(r.num_waiting, LOAD_AWARE_THRESHOLD) / LOAD_AWARE_THRESHOLD)
            for r in view.replicas]


def prefix_cache(view: View) -> list[float]:
    return _fraction(view.approx, view.num_blocks)


def precise_prefix_cache(view: View) -> list[float]:
    return _fraction(view.precise, view.num_blocks)


def _fraction(matched: Sequence[int], num_blocks: int) -> list[float]:
    if num_blocks <= 0:
        return [0.0] * len(matched)
    return [m / num_blocks for m in matched]


SCORERS: dict[str, Callable[[View], list[float]]] = {
    "queue-scorer": queue,
    "kv-cache-utilization-scorer": kv_utilization,
    "active-request-scorer": active_requests,
    "load-aware-scorer": load_aware,
    "prefix-cache-scorer": prefix_cache,
    "precise-prefix-cache-scorer": precise_prefix_cache,
}


def weighted(profile: Sequence[tuple[str, float]], view: View) -> list[float]:
    """Each replica's sum of weight x score over the profile's scorers."""
    return add_weighted([0.0] * len(view.replicas),
                        [(weight, SCORERS[name](view)) for name, weight in profile])


def add_weighted(totals: list[float], terms: Sequence[tuple[float, Sequence[float]]]
                 ) -> list[float]:
    """`totals` plus weight x score for each term in order, replica by replica (at C speed)."""
    for weight, scores in terms:
        totals = list(map(add, totals, map(mul, repeat(weight), scores)))
    return totals


# the scorers that read only the scraped states: the same for every request until the next scrape
PER_SCRAPE = ("queue-scorer", "kv-cache-utilization-scorer", "load-aware-scorer")
PREFIX_SCORERS = ("prefix-cache-scorer", "precise-prefix-cache-scorer")


class Totals:
    """weighted(), request after request between scrapes: the per-scrape scorers are scored
    once a scrape (a scrape is a new states list: core/fleet.py observe), and a replica whose
    prefix scores are 0 keeps that sum; only the replicas that matched blocks are summed
    again. A sum runs in the profile's order, so each total is weighted()'s to the bit: the
    scorers before the first prefix scorer are summed once a scrape (`head`), the rest
    (`tail`) per matched replica. A profile with a scorer of the router's own counts
    (active-request) is summed whole every time."""

    def __init__(self, profile: Sequence[tuple[str, float]]) -> None:
        self.profile = tuple(profile)
        self.whole = any(name not in PER_SCRAPE + PREFIX_SCORERS for name, _ in profile)
        first = next((k for k, (name, _) in enumerate(self.profile) if name in PREFIX_SCORERS),
                     len(self.profile))
        self.split = first
        self.states: Sequence[ReplicaState] | None = None
        self.base: list[float] = []
        self.head: list[float] = []
        # the tail's terms as a matched row reads them: (weight, the scrape's scores or None
        # for a prefix scorer, whether that one reads the approximate counts)
        self.tail: list[tuple[float, list[float] | None, bool]] = []

    def of(self, view: View, matched: Iterable[int] | None = None) -> list[float]:
        """The totals; `matched`: the replicas whose approx or precise count may be nonzero
        (None: any)."""
        if self.whole:
            return weighted(self.profile, view)
        if view.replicas is not self.states:
            n = len(view.replicas)
            unmatched = View(view.replicas, view.in_flight, 0, [0] * n, [0] * n)
            parts = {name: SCORERS[name](unmatched) for name, _ in self.profile}
            terms = [(weight, parts[name]) for name, weight in self.profile]
            self.head = add_weighted([0.0] * n, terms[:self.split])
            self.base = add_weighted(self.head, terms[self.split:])  # (weighted()'s order)
            self.tail = [(weight, None if name in PREFIX_SCORERS else parts[name],
                          name == "prefix-cache-scorer")
                         for name, weight in self.profile[self.split:]]
            self.states = view.replicas
        totals = list(self.base)
        num_blocks = view.num_blocks
        if num_blocks <= 0:
            return totals
        tail, head = self.tail, self.head
        approxs, precises = view.approx, view.precise
        for i in range(len(totals)) if matched is None else matched:
            approx, precise = approxs[i], precises[i]
            if approx or precise:
                total = head[i]
                for weight, part, reads_approx in tail:
                    total += weight * (part[i] if part is not None else
                                       (approx if reads_approx else precise) / num_blocks)
                totals[i] = total
        return totals
