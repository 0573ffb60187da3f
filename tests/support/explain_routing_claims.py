"""The routing section's claims on /explain (#routing), each shown on the simulator's routers
and fleet with hand-made replica states, sends and KV events (registered into
support/explain_claims.py's CLAIMS)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from servescope.core.config import EngineConfig
from servescope.core.fleet import Fleet
from servescope.core.prefix import prompt_block_hashes
from servescope.core.request import RequestSpec
from servescope.core.routers.base import Decision, ReplicaState, Router
from servescope.core.routers.least_requests import LeastRequestsRouter
from servescope.core.routers.prefix_approx import PrefixApproxRouter
from servescope.core.routers.prefix_precise import PrefixPreciseRouter
from servescope.core.routers.round_robin import RoundRobinRouter
from support.explain_claims import claim

BLOCK = 4


def states(waiting: Sequence[int]) -> list[ReplicaState]:
    return [ReplicaState(i, 0, w, 0.5, 100, 100, BLOCK, 0.0) for i, w in enumerate(waiting)]


def chat(rid: str, tenant: str = "sys") -> RequestSpec:
    """40 prompt tokens, the first 32 a tenant's system prompt: 8 shared blocks of 10."""
    return RequestSpec(rid, 40, 4, arrival_s=0.0, prefix=((tenant, 32),))


@claim("routing-round-robin")
def routing_round_robin() -> None:
    """Replica 0's long queue changes nothing: 0, 1, 2, 0, 1."""
    router = RoundRobinRouter(3, {}, 0, BLOCK)
    picks = []
    for k in range(5):
        picks.append(router.pick(chat(f"r{k}"), states([50, 0, 0]), 0.0).replica)
        router.sent(chat(f"r{k}"), picks[-1], 0.0)
    assert picks == [0, 1, 2, 0, 1]


@claim("routing-least-requests")
def routing_least_requests() -> None:
    """It reads its own count of sends not seen finish (2, 1, 1), not the scrape (all idle,
    then replica 0 with 9 waiting): once both of replica 0's finish, replica 0 is picked."""
    router = LeastRequestsRouter(3, {}, 0, BLOCK)
    for rid, replica in (("a", 0), ("b", 0), ("c", 1), ("d", 2)):
        router.sent(chat(rid), replica, 0.0)
    assert router.pick(chat("e"), states([0, 0, 0]), 0.0).replica in (1, 2)
    router.finished("a", 0, 0.1)
    router.finished("b", 0, 0.1)  # its own count: 0, 1, 1
    assert router.pick(chat("f"), states([9, 0, 0]), 0.1).replica == 0


class Spy(Router):
    """Round-robin that writes down the scrape time of every state it is shown."""

    name = "spy"

    def __init__(self, num_replicas: int) -> None:
        super().__init__(num_replicas, {}, 0, BLOCK)
        self.seen: list[tuple[float, set[float]]] = []

    def pick(self, request: RequestSpec, replicas: Sequence[ReplicaState],
             now_s: float) -> Decision:
        self.seen.append((now_s, {r.scraped_s for r in replicas}))
        return Decision(len(self.seen) % len(replicas), (0.0,) * len(replicas), "spy")


@claim("routing-staleness")
def routing_staleness() -> None:
    """Arrivals at 7, 49, 51 and 130 ms see the scrapes of 0, 0, 50 and 100 ms; with
    scrape_interval_ms 0 each sees its own arrival."""
    times = [0.007, 0.049, 0.051, 0.130]
    specs = [RequestSpec(f"r{k}", 16, 4, arrival_s=t) for k, t in enumerate(times)]
    config = EngineConfig.from_dict({"num_gpu_blocks": 64, "block_size": BLOCK})
    for interval_ms, want in ((50.0, [0.0, 0.0, 0.05, 0.1]), (0.0, times)):
        spy = Spy(2)
        Fleet([config] * 2, specs, spy, records=False,
              scrape_interval_ms=interval_ms).run_to_end()
        assert [now for now, _ in spy.seen] == times
        for (_, scraped), expected in zip(spy.seen, want, strict=True):
            (only,) = scraped  # every replica as of the same scrape
            assert math.isclose(only, expected, abs_tol=1e-9), (interval_ms, only, expected)


@claim("routing-prefix-approx")
def routing_prefix_approx() -> None:
    """After it sent one sys chat to replica 1, it believes 1 holds sys's 8 blocks (of 10), and
    sends the next sys chat there; another tenant's matches nothing."""
    router = PrefixApproxRouter(2, {}, 0, BLOCK)
    router.pick(chat("a"), states([0, 0]), 0.0)
    router.sent(chat("a"), 1, 0.0)
    assert router.approx.match(prompt_block_hashes(chat("b"), BLOCK)) == [0, 8]
    assert router.pick(chat("b"), states([0, 0]), 0.0).replica == 1
    assert router.approx.match(prompt_block_hashes(chat("c", "other"), BLOCK)) == [0, 0]


@claim("routing-prefix-precise")
def routing_prefix_precise() -> None:
    """Replica 0 says it stored sys's blocks: they count there once the event arrives (after
    kv_event_delay_ms), and stop counting from block 0 on once its removal arrives."""
    router = PrefixPreciseRouter(2, {"kv_event_delay_ms": 100}, 0, BLOCK)
    hashes = prompt_block_hashes(chat("a"), BLOCK)
    router.kv_events(0, [("stored", hashes[:8])], 1.0)
    router.pick(chat("b"), states([0, 0]), 1.05)
    assert router.precise.match(hashes) == [0, 0]  # not arrived yet
    router.pick(chat("b"), states([0, 0]), 1.1)
    assert router.precise.match(hashes) == [8, 0]
    router.kv_events(0, [("removed", hashes[:1])], 2.0)
    router.pick(chat("c"), states([0, 0]), 2.1)
    assert router.precise.match(hashes) == [0, 0]  # a prefix match stops at block 0
