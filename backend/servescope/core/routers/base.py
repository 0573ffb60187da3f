"""What a router sees and answers: a replica's scraped state, a decision, and the Router base
class (pick a replica per request; hear what was sent, what finished, and KV events).

The shapes are the fleet's shared interface (issue #35); each rule lives in its own module and
cites where it comes from.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress, repeat
from operator import eq
from typing import Any, NamedTuple

import numpy as np

from servescope.core.config_error import ConfigError
from servescope.core.request import RequestSpec


class ReplicaState(NamedTuple):
    """One replica as the router last scraped it (vLLM's /metrics gauges), as of `scraped_s`.
    (A NamedTuple: a fleet makes one per replica per scrape, at a third of a frozen
    dataclass's cost.)"""

    replica: int
    num_running: int  # vllm:num_requests_running
    num_waiting: int  # vllm:num_requests_waiting
    kv_usage: float  # vllm:kv_cache_usage_perc, 0..1
    num_free_blocks: int
    num_usable_blocks: int
    block_size: int
    scraped_s: float


class Decision(NamedTuple):
    """The replica picked, each replica's score (higher = preferred), and why in one line.
    (A NamedTuple, as ReplicaState: one a request.)"""

    replica: int
    scores: tuple[float, ...]
    reason: str


class Router:
    """A router picks a replica per request. Subclasses override `pick` and whatever
    bookkeeping their rule needs; `totals` is what the summary's `router` object adds."""

    name = ""
    settings: tuple[str, ...] = ()  # the router_config keys the rule reads
    # False: the rule reads neither replica states nor finishes, so a fleet without records
    # need not stop its replicas at scrapes (core/fleet.py)
    reads_replicas = True
    wants_kv_events = False  # whether the fleet feeds it each replica's KV events (fleet.py)

    def __init__(self, num_replicas: int, config: dict[str, Any], seed: int,
                 block_size: int) -> None:
        for key in config:
            if key not in self.settings:
                raise ConfigError("router_config", f"{str(key)[:80]!r} is not a setting of "
                                  f"the {self.name} router (its settings: "
                                  f"{', '.join(self.settings) or 'none'})")
        self.num_replicas = num_replicas
        self.config = dict(config)
        self.seed = seed
        self.rng = np.random.default_rng(seed)  # ties and random picks, seeded
        self.block_size = block_size
        self.decisions = 0
        self.fallbacks = 0  # decisions the rule could not make (no session id, ...)

    def pick(self, request: RequestSpec, replicas: Sequence[ReplicaState],
             now_s: float) -> Decision:
        raise NotImplementedError

    def sent(self, request: RequestSpec, replica: int, now_s: float) -> None:
        self.decisions += 1

    def finished(self, request_id: str, replica: int, now_s: float) -> None:
        return None

    def kv_events(self, replica: int, events: Sequence[tuple[str, tuple[int, ...]]],
                  now_s: float) -> None:
        return None

    def prompt_hashes(self, request_id: str) -> tuple[int, ...] | None:
        """The block hashes of the prompt just picked for, if the rule hashed it
        (core/prefix.py prompt_block_hashes at this block size, no lookahead), so that the
        replica need not hash it again; None: not hashed."""
        return None

    def totals(self) -> dict[str, Any]:
        """The summary's `router` object: name, decisions and the rule's own counts."""
        return {"name": self.name, "decisions": self.decisions, "fallbacks": self.fallbacks}

    def setting(self, key: str, default: float) -> float:
        """router_config[key], a number > 0 (ConfigError naming it), else `default`."""
        value = self.config.get(key, default)
        if not isinstance(value, int | float) or isinstance(value, bool) or not value > 0:
            raise ConfigError(f"router_config.{key}", f"expected a number > 0, got {value!r:.80}")
        return float(value)


def lowest(values: Sequence[float], start: int = 0) -> int:
    """The index of the smallest value; ties go to the first from `start` on (wrapping)."""
    n = len(values)
    best = start % n
    for i in range(1, n):
        idx = (start + i) % n
        if values[idx] < values[best]:
            best = idx
    return best


def decide(values: Sequence[float], start: int, what: str) -> Decision:
    """The replica with the least of `values` (scores are their negatives), ties from `start`."""
    best = lowest(values, start)
    return Decision(best, tuple(-float(v) for v in values),
                    f"least {what}: {values[best]:g} (fleet's most: {max(values):g})")


def sole_best(scores: Sequence[float]) -> int | None:
    """The replica with the highest score if no other has it, else None."""
    top = max(scores)
    return scores.index(top) if scores.count(top) == 1 else None


def tied_best(scores: Sequence[float]) -> list[int]:
    """The replicas with the highest score, in order (at C speed: a fleet of dozens of idle
    replicas ties at every pick)."""
    top = max(scores)
    return list(compress(range(len(scores)), map(eq, scores, repeat(top))))


def draw(tied: Sequence[int], rng: Any) -> int:
    """One of the tied replicas at random, as llm-d's max-score picker shuffles the candidates
    before taking the first best."""
    return tied[int(rng.integers(len(tied)))]


def best_of(scores: Sequence[float], rng: Any) -> int:
    """The highest score; ties broken at random (`draw`: the draw only happens on a tie)."""
    sole = sole_best(scores)  # (C-speed: most picks have one best)
    return draw(tied_best(scores), rng) if sole is None else sole
