"""llm-d's scorers (core/routers/scorers.py) on hand-made replica states; each expected value
is the rule in the llm-d-inference-scheduler file the module cites, worked by hand."""

import pytest

from servescope.core.routers.base import ReplicaState
from servescope.core.routers.scorers import SCORERS, Totals, View, weighted


def states(waiting, kv=None):
    kv = kv or [0.0] * len(waiting)
    return [ReplicaState(i, 0, w, u, 10, 100, 16, 0.0)
            for i, (w, u) in enumerate(zip(waiting, kv, strict=True))]


def view(waiting=(0, 0), kv=None, in_flight=None, approx=None, precise=None, num_blocks=4):
    n = len(waiting)
    return View(states(list(waiting), kv), in_flight or [0] * n, num_blocks,
                approx or [0] * n, precise or [0] * n)


def test_queue_scorer_is_min_max_of_the_waiting():
    assert SCORERS["queue-scorer"](view((0, 4, 2))) == [1.0, 0.0, 0.5]
    assert SCORERS["queue-scorer"](view((3, 3))) == [1.0, 1.0]  # all equal: 1


def test_kv_utilisation_and_load_aware():
    assert SCORERS["kv-cache-utilization-scorer"](view(kv=[0.25, 1.0])) == [0.75, 0.0]
    # no waiting request 0.5; else 0.5 * (1 - min(waiting, 128) / 128)
    assert SCORERS["load-aware-scorer"](view((0, 64, 200))) == [0.5, 0.25, 0.0]


def test_active_requests_idle_scores_one_then_relative_to_the_busiest():
    assert SCORERS["active-request-scorer"](view((0, 0, 0), in_flight=[0, 2, 4])) == \
        [1.0, 0.5, 0.0]


def test_prefix_scorers_are_matched_over_prompt_blocks():
    v = view(approx=[3, 0], precise=[0, 4])
    assert SCORERS["prefix-cache-scorer"](v) == [0.75, 0.0]
    assert SCORERS["precise-prefix-cache-scorer"](v) == [0.0, 1.0]
    assert SCORERS["prefix-cache-scorer"](view(approx=[0, 0], num_blocks=0)) == [0.0, 0.0]


def test_the_default_profile_weighs_prefix_3_queue_2_kv_2():
    profile = (("queue-scorer", 2.0), ("kv-cache-utilization-scorer", 2.0),
               ("prefix-cache-scorer", 3.0))
    # replica 0 holds the whole prompt but 3 wait there: 3*1 + 2*0 + 2*0.5 = 4 vs 0 + 2 + 1 = 3
    assert weighted(profile, view((3, 0), kv=[0.5, 0.5], approx=[4, 0])) == \
        pytest.approx([4.0, 3.0])
    # and when its KV is nearly full: 3 + 0 + 2*0.1 = 3.2 vs 0 + 2 + 2*0.9 = 3.8
    assert weighted(profile, view((3, 0), kv=[0.9, 0.1], approx=[4, 0])) == \
        pytest.approx([3.2, 3.8])


@pytest.mark.parametrize("profile", [
    (("queue-scorer", 2.0), ("kv-cache-utilization-scorer", 2.0), ("prefix-cache-scorer", 3.0)),
    (("precise-prefix-cache-scorer", 2.0), ("kv-cache-utilization-scorer", 1.0),
     ("queue-scorer", 1.0)),
    (("prefix-cache-scorer", 0.7), ("active-request-scorer", 1.3), ("load-aware-scorer", 0.1)),
    # per-scrape scorers before, between and after the prefix scorers (summed in this order)
    (("load-aware-scorer", 0.3), ("kv-cache-utilization-scorer", 1.1),
     ("prefix-cache-scorer", 0.9), ("queue-scorer", 1.7), ("precise-prefix-cache-scorer", 0.3)),
])
def test_totals_between_scrapes_are_weighted_to_the_bit(profile):
    """Totals keeps one scrape's scores across requests: each request's totals equal
    weighted() exactly, whatever its matches, and a new scrape (a new list) is read anew."""
    totals = Totals(profile)
    first = states([3, 0, 7, 1], [0.31, 0.77, 0.1, 0.53])
    second = states([0, 5, 2, 2], [0.9, 0.05, 0.45, 0.2])
    picks = [(first, [1, 0, 0, 2], [0, 0, 3, 1], 7), (first, [0, 0, 0, 0], [0, 5, 0, 0], 6),
             (first, [6, 6, 0, 0], [0, 0, 0, 0], 0), (second, [2, 0, 1, 0], [0, 3, 0, 0], 9),
             (second, [0, 0, 0, 0], [0, 0, 0, 0], 3)]
    for k, (scraped, approx, precise, num_blocks) in enumerate(picks):
        seen = View(scraped, [k, 2, 0, 1], num_blocks, approx, precise)
        assert totals.of(seen) == weighted(profile, seen)
