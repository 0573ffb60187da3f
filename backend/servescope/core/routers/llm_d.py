"""llm-d's endpoint picker as a router: filter -> score -> pick (llm-d-inference-scheduler,
commit 520af478).

Filter: every replica passes (the decode-filter keeps decode pods; a fleet here has only those).
Score: each scorer of the profile (core/routers/scorers.py) scores every replica in [0, 1]; a
replica's total is the weighted sum. Pick: the max-score-picker takes the highest total, ties
broken at random (picker/maxscore: it shuffles before sorting). The default profile is the
Helm chart's (config/charts/epplib/templates/_config.yaml, schedulingProfiles "default"):
queue-scorer 2, kv-cache-utilization-scorer 2, prefix-cache-scorer 3.

router_config:
  scorers                  the profile: {scorer name: weight}, or llm-d's own list of
                           {pluginRef, weight} (schedulingProfiles[].plugins)
  lru_capacity_per_server  the approximate index's LRU size per replica (llm-d's
                           lruCapacityPerServer); default: the replica's KV blocks (autoTune),
                           31250 before its first scrape
  max_prefix_blocks        prompt blocks the approximate index matches (maxPrefixBlocksToMatch,
                           default 256)
  kv_event_delay_ms        how long a replica's KV event takes to reach the precise index
                           (default 0: vLLM publishes a step's events as the step ends)
The prompt's block hashes are the replica's own (core/prefix.py prompt_block_hashes, by
core/routers/prompt_hashes.py).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

from servescope.core.config_error import ConfigError
from servescope.core.request import RequestSpec
from servescope.core.routers.base import Decision, ReplicaState, Router, best_of
from servescope.core.routers.prefix_index import ApproxIndex, EventIndex, dense
from servescope.core.routers.prompt_hashes import PromptHashes
from servescope.core.routers.scorers import SCORERS, Totals, View

MAX_PREFIX_BLOCKS = 256  # approximateprefix/types.go defaultMaxPrefixBlocks
LRU_CAPACITY_PER_SERVER = 31250  # its defaultLRUCapacityPerServer: a replica not scraped yet
Profile = tuple[tuple[str, float], ...]
NONE: dict[int, int] = {}  # what an index no scorer reads matches (never written)


class LlmDRouter(Router):
    name = "llm-d"
    settings = ("scorers", "lru_capacity_per_server", "max_prefix_blocks", "kv_event_delay_ms")
    default_profile: Profile = (("queue-scorer", 2.0), ("kv-cache-utilization-scorer", 2.0),
                                ("prefix-cache-scorer", 3.0))

    def __init__(self, num_replicas: int, config: dict[str, Any], seed: int,
                 block_size: int) -> None:
        super().__init__(num_replicas, config, seed, block_size)
        self.profile = parse_profile(config.get("scorers"), self.default_profile)
        names = {name for name, _ in self.profile}
        self.uses_approx = "prefix-cache-scorer" in names
        self.wants_kv_events = "precise-prefix-cache-scorer" in names
        self.uses_prefix = self.uses_approx or self.wants_kv_events
        self.capacity = (int(self.setting("lru_capacity_per_server", 1))
                         if "lru_capacity_per_server" in config else None)
        self.max_blocks = int(self.setting("max_prefix_blocks", MAX_PREFIX_BLOCKS))
        delay = config.get("kv_event_delay_ms", 0.0)
        if not isinstance(delay, int | float) or isinstance(delay, bool) or not delay >= 0:
            raise ConfigError("router_config.kv_event_delay_ms",
                              f"expected a number >= 0, got {delay!r:.80}")
        self.delay_s = float(delay) / 1000.0
        self.totals_of = Totals(self.profile)
        self.prompt_memo = PromptHashes(block_size)  # shared prefixes hashed once
        self.approx = ApproxIndex(num_replicas)
        self.precise = EventIndex(num_replicas)
        self.pending: deque[tuple[float, int, Sequence[tuple[str, tuple[int, ...]]]]] = deque()
        self.in_flight = [0] * num_replicas
        self.replicas: Sequence[ReplicaState] = ()  # as last scraped (their KV blocks)
        self.last: tuple[str, tuple[int, ...]] = ("", ())  # the request picked for, its hashes
        self.matched_blocks = 0  # over the decisions: blocks the picked replica matched
        self.prompt_blocks = 0

    def pick(self, request: RequestSpec, replicas: Sequence[ReplicaState],
             now_s: float) -> Decision:
        self._deliver(now_s)
        self.replicas = replicas
        hashes = self._hashes(request)
        self.last = (request.id, hashes)
        # an index no scorer of the profile reads stays empty: it matches nothing
        n = self.num_replicas
        approx = self.approx.matched(hashes[:self.max_blocks]) if self.uses_approx else NONE
        precise = self.precise.matched(hashes) if self.wants_kv_events else NONE
        view = View(replicas, self.in_flight, len(hashes), dense(approx, n), dense(precise, n))
        totals = self.totals_of.of(view, approx.keys() | precise.keys())
        best = best_of(totals, self.rng)
        matched = max(view.approx[best], view.precise[best])
        self.matched_blocks += matched
        self.prompt_blocks += len(hashes)
        return Decision(best, tuple(totals), f"{self.name}: best weighted score "
                        f"{totals[best]:.3g}, {matched}/{len(hashes)} prompt blocks cached")

    def sent(self, request: RequestSpec, replica: int, now_s: float) -> None:
        super().sent(request, replica, now_s)
        self.in_flight[replica] += 1
        if not self.uses_approx:
            return
        rid, hashes = self.last
        if rid != request.id:
            hashes = self._hashes(request)
        num_blocks = self.replicas[replica].num_usable_blocks if self.replicas else 0
        capacity = self.capacity or num_blocks or LRU_CAPACITY_PER_SERVER
        self.approx.add(replica, hashes[:self.max_blocks], capacity)

    def _hashes(self, request: RequestSpec) -> tuple[int, ...]:
        """The prompt's block hashes, when a scorer of the profile reads them."""
        if not self.uses_prefix:
            return ()
        return self.prompt_memo.of(request)

    def prompt_hashes(self, request_id: str) -> tuple[int, ...] | None:
        rid, hashes = self.last
        return hashes if rid == request_id and self.uses_prefix else None

    def finished(self, request_id: str, replica: int, now_s: float) -> None:
        self.in_flight[replica] = max(0, self.in_flight[replica] - 1)

    def kv_events(self, replica: int, events: Sequence[tuple[str, tuple[int, ...]]],
                  now_s: float) -> None:
        self.pending.append((now_s + self.delay_s, replica, events))
        self._deliver(now_s)

    def _deliver(self, now_s: float) -> None:
        """Apply the KV events that have reached the index by `now_s`, in emission order."""
        while self.pending and self.pending[0][0] <= now_s:
            _, replica, events = self.pending.popleft()
            for kind, hashes in events:
                self.precise.apply(replica, kind, hashes)

    def totals(self) -> dict[str, Any]:
        return {**super().totals(), "profile": dict(self.profile),
                "matched_blocks": self.matched_blocks, "prompt_blocks": self.prompt_blocks}


def parse_profile(given: Any, default: Profile) -> Profile:
    """router_config's `scorers` as ((scorer, weight), ...); ConfigError names what is wrong."""
    if given is None:
        return default
    field = "router_config.scorers"
    if isinstance(given, list):  # llm-d's schedulingProfiles[].plugins entries
        pairs = [(p.get("pluginRef", p.get("type")), p.get("weight", 1))
                 for p in given if isinstance(p, dict)]
        if len(pairs) != len(given):
            raise ConfigError(field, "expected {pluginRef, weight} objects")
    elif isinstance(given, dict):
        pairs = list(given.items())
    else:
        raise ConfigError(field, f"expected {{scorer: weight}}, got {given!r:.80}")
    pairs = [(name, weight) for name, weight in pairs if name not in PICKERS_AND_FILTERS]
    for name, weight in pairs:
        if name not in SCORERS:
            raise ConfigError(field, f"{str(name)[:80]!r} is not a scorer here (known: "
                              f"{', '.join(SCORERS)})")
        if not isinstance(weight, int | float) or isinstance(weight, bool) or weight < 0:
            raise ConfigError(field, f"{name}: weight must be a number >= 0, got {weight!r:.80}")
    if not pairs:
        raise ConfigError(field, "name at least one scorer")
    return tuple((str(name), float(weight)) for name, weight in pairs)


# plugins a profile lists beside its scorers, whose job the router does itself
PICKERS_AND_FILTERS = ("decode-filter", "max-score-picker")
