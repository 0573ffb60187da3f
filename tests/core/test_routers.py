"""Each router's rule on hand-made replica states (the rule's source is cited in its module)."""

from __future__ import annotations

import numpy as np
import pytest

from servescope.core.config import ROUTERS, ConfigError
from servescope.core.request import RequestSpec
from servescope.core.routers import base, make
from servescope.core.routers.base import ReplicaState
from servescope.core.routers.data_parallel import DataParallelRouter
from servescope.core.routers.session import SessionRouter


def state(replica: int, running: int = 0, waiting: int = 0, kv: float = 0.0,
          at: float = 0.0) -> ReplicaState:
    return ReplicaState(replica, running, waiting, kv, 100, 100, 16, at)


def spec(rid: str = "r", session: str | None = None, at: float = 0.0) -> RequestSpec:
    return RequestSpec(rid, 10, 5, arrival_s=at, session_id=session)


def test_the_map_names_exactly_the_accepted_routers() -> None:
    assert tuple(make.ROUTERS) == ROUTERS
    for name, cls in make.ROUTERS.items():
        assert cls.name == name


def test_an_unknown_router_or_setting_names_the_field() -> None:
    with pytest.raises(ConfigError) as err:
        make.make_router("fastest", 2)
    assert err.value.field == "router"
    with pytest.raises(ConfigError) as err:
        make.make_router("round-robin", 2, {"weights": 1})
    assert err.value.field == "router_config"
    with pytest.raises(ConfigError) as err:
        make.make_router("session", 2, {"qps_window_s": -1})
    assert err.value.field == "router_config.qps_window_s"


def test_round_robin_takes_the_replicas_in_turn_whatever_they_hold() -> None:
    # production-stack RoundRobinRouter: sorted(endpoints)[req_id % n], req_id += 1
    router = make.make_router("round-robin", 3)
    busy = [state(0, waiting=9), state(1), state(2)]
    picks = []
    for i in range(5):
        picks.append(router.pick(spec(f"r{i}"), busy, 0.0).replica)
        router.sent(spec(f"r{i}"), picks[-1], 0.0)
    assert picks == [0, 1, 2, 0, 1]


def test_random_is_seeded_and_spreads() -> None:
    def draws(seed: int) -> list[int]:
        router = make.make_router("random", 4, seed=seed)
        return [router.pick(spec(), [state(i) for i in range(4)], 0.0).replica
                for _ in range(200)]
    assert draws(7) == draws(7)
    assert draws(7) != draws(8)
    assert set(draws(7)) == {0, 1, 2, 3}


def test_least_requests_counts_what_it_sent_and_has_not_seen_finish() -> None:
    # vLLM DPLBAsyncMPClient.engine_inflight: raised when sent, lowered when finished
    router = make.make_router("least-requests", 3)
    states = [state(0, running=50), state(1), state(2)]  # scraped load is not its rule
    for rid, replica in (("a", 0), ("b", 1), ("c", 1), ("d", 2), ("e", 2)):
        router.sent(spec(rid), replica, 0.0)
    assert router.pick(spec("e"), states, 0.0).replica == 0  # 1 in flight, against 2 and 2
    router.finished("b", 1, 1.0)
    router.finished("c", 1, 1.0)
    assert router.pick(spec("e"), states, 1.0).replica == 1  # now none in flight there


def test_least_kv_picks_the_lowest_scraped_usage() -> None:
    router = make.make_router("least-kv", 3)
    decision = router.pick(spec(), [state(0, kv=0.7), state(1, kv=0.2), state(2, kv=0.5)], 0.0)
    assert decision.replica == 1
    assert decision.scores == pytest.approx((0.3, 0.8, 0.5))  # llm-d: 1 - usage


def test_least_kv_scores_each_scrape_and_draws_each_tied_pick() -> None:
    # the fleet passes one states list per scrape; a new list is a new scrape
    router = make.make_router("least-kv", 3, seed=1)
    first = [state(0, kv=0.7), state(1, kv=0.2), state(2, kv=0.5)]
    assert [router.pick(spec(), first, 0.0).replica for _ in range(3)] == [1, 1, 1]
    later = [state(0, kv=0.7), state(1, kv=0.9), state(2, kv=0.5, at=0.05)]
    decision = router.pick(spec(), later, 0.06)
    assert decision.replica == 2 and "scraped at 0.050 s" in decision.reason
    tied = [state(0, kv=0.4), state(1, kv=0.4), state(2, kv=0.9)]
    assert {router.pick(spec(), tied, 0.1).replica for _ in range(30)} == {0, 1}


def test_the_tied_best_are_every_replica_at_the_top_score() -> None:
    assert base.tied_best([0.5, 2, 2.0, 1.5, 2.0]) == [1, 2, 4]  # an int ties its float
    assert base.tied_best([0.0]) == [0]
    rng = np.random.default_rng(3)
    assert {base.best_of([0.1, 0.9, 0.9, 0.2], rng) for _ in range(40)} == {1, 2}
    assert base.best_of([0.1, 0.9, 0.3], rng) == 1


def test_shortest_queue_reads_the_scraped_waiting_count() -> None:
    router = make.make_router("shortest-queue", 3)
    states = [state(0, running=1, waiting=4), state(1, running=40, waiting=2), state(2, waiting=6)]
    decision = router.pick(spec(), states, 0.0)
    assert decision.replica == 1  # running requests do not count, waiting ones do
    assert decision.scores == pytest.approx((0.5, 1.0, 0.0))  # llm-d: (max - w) / (max - min)


def test_ties_are_broken_by_the_seeded_generator() -> None:
    states = [state(0), state(1), state(2)]
    picks = {make.make_router("shortest-queue", 3, seed=s).pick(spec(), states, 0.0).replica
             for s in range(30)}
    assert picks == {0, 1, 2}


def test_session_keeps_a_session_on_one_replica_and_moves_few_when_one_is_added() -> None:
    router = make.make_router("session", 4)
    states = [state(i) for i in range(4)]
    homes = {s: router.pick(spec(session=f"user{s}"), states, 0.0).replica for s in range(400)}
    again = {s: router.pick(spec(session=f"user{s}"), states, 9.0).replica for s in range(400)}
    assert homes == again
    counts = [list(homes.values()).count(i) for i in range(4)]
    assert min(counts) > 50  # 40 vnodes x 4 points each spread sessions roughly evenly
    grown = SessionRouter(5, {}, 0, 16)
    moved = sum(grown.pick(spec(session=f"user{s}"), [state(i) for i in range(5)], 0.0).replica
                != homes[s] for s in range(400))
    assert moved < 400 * 0.35  # consistent hashing: about 1/5 move, not 4/5


def test_session_without_an_id_falls_back_to_the_lowest_qps_and_counts_it() -> None:
    # production-stack _qps_routing: the first endpoint with no requests, else the lowest QPS
    router = make.make_router("session", 3, {"qps_window_s": 10})
    states = [state(i) for i in range(3)]
    for replica, at in ((0, 0.0), (1, 0.0), (1, 1.0), (2, 2.0), (2, 3.0), (2, 4.0)):
        router.sent(spec(session="s"), replica, at)
    assert router.pick(spec(), states, 5.0).replica == 0  # 1 request in the window
    assert router.pick(spec(), states, 10.5).replica == 0  # its request left the window
    router.sent(spec(), 0, 10.5)
    assert router.totals()["fallbacks"] == 1


def test_data_parallel_balances_as_vllms_dp_client() -> None:
    # vLLM 0.33 get_core_engine_for_request: max(in-flight, waiting + running), plus
    # waiting * 6 * max(0, usage - 0.5); the chosen engine's waiting count goes up by one
    router = DataParallelRouter(3, {}, 0, 16)
    states = [state(0, running=3, waiting=1, kv=0.9), state(1, running=4), state(2, running=5)]
    first = router.pick(spec("a"), states, 0.0)
    assert first.replica == 1  # replica 0: 4 + 1 * 6 * 0.4 = 6.4 against 4
    assert first.scores == pytest.approx((-6.4, -4.0, -5.0))
    router.sent(spec("a"), 1, 0.0)
    second = router.pick(spec("b"), states, 0.0)  # replica 1 now 4 running + 1 waiting = 5
    assert second.replica == 1  # the tie (5, 5) goes to the first from the rotated start, 1
