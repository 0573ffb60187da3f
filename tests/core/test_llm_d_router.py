"""The prefix-aware routers (core/routers/llm_d.py, prefix_approx.py, prefix_precise.py) on
hand-made replica states, sends and KV events: llm-d's filter -> score -> pick with the
profiles its configs give (the Helm chart's default, the estimate and precise samples)."""

import pytest

from servescope.core.config_error import ConfigError
from servescope.core.prefix import prompt_block_hashes
from servescope.core.request import RequestSpec
from servescope.core.routers.base import ReplicaState
from servescope.core.routers.llm_d import LlmDRouter
from servescope.core.routers.prefix_approx import PrefixApproxRouter
from servescope.core.routers.prefix_precise import PrefixPreciseRouter

BLOCK = 4


def states(waiting=(0, 0), kv=(0.5, 0.5), blocks=100):
    return [ReplicaState(i, 0, w, u, blocks, blocks, BLOCK, 0.0)
            for i, (w, u) in enumerate(zip(waiting, kv, strict=True))]


def spec(rid, tenant="sys", shared=32, prompt=40):
    return RequestSpec(rid, prompt, 4, arrival_s=0.0, prefix=((tenant, shared),))


def send(router, request, replica, now_s=0.0):
    router.sent(request, replica, now_s)


def test_llm_d_default_prefers_the_cached_replica_until_its_kv_is_nearly_full():
    router = LlmDRouter(2, {}, seed=0, block_size=BLOCK)
    send(router, spec("a"), 0)  # the router now believes replica 0 holds sys's 8 blocks
    # same prompt blocks 0..7 (the 8 system blocks; the 2 own blocks differ): 8/10 matched
    cached = router.pick(spec("b"), states(waiting=(3, 0)), 0.0)
    assert cached.replica == 0  # 3*0.8 + 2*0 + 2*0.5 = 3.4 > 0 + 2 + 1 = 3
    assert cached.scores == pytest.approx((3.4, 3.0))
    full = router.pick(spec("c"), states(waiting=(3, 0), kv=(0.9, 0.1)), 0.0)
    assert full.replica == 1  # 2.4 + 0.2 = 2.6 < 2 + 1.8 = 3.8


def test_a_new_prefix_goes_by_load_alone():
    router = LlmDRouter(3, {}, seed=0, block_size=BLOCK)
    send(router, spec("a"), 0)
    d = router.pick(spec("b", tenant="other"), states((2, 0, 1), (0.5, 0.5, 0.5)), 0.0)
    assert d.replica == 1


def test_approx_lru_capacity_bounds_what_it_remembers():
    # capacity 4 keeps the last 4 of a's 10 hashes: block 0 is forgotten, nothing matches
    small = PrefixApproxRouter(2, {"lru_capacity_per_server": 4}, 0, BLOCK)
    send(small, spec("a"), 1)
    assert small.approx.match(prompt_block_hashes(spec("b"), BLOCK)) == [0, 0]
    big = PrefixApproxRouter(2, {}, 0, BLOCK)  # default: the replica's KV blocks (autoTune)
    big.pick(spec("a"), states(), 0.0)
    send(big, spec("a"), 1)
    assert big.pick(spec("b"), states(), 0.0).replica == 1  # 0.8 + 0.5 vs 0 + 0.5


def test_approx_ties_are_broken_at_random_and_seeded():
    tie = states((0,) * 4, (0.0,) * 4)
    picks = {seed: PrefixApproxRouter(4, {}, seed, BLOCK).pick(spec("a"), tie, 0.0).replica
             for seed in range(12)}
    assert len(set(picks.values())) > 1  # all tie: the seed decides
    assert PrefixApproxRouter(4, {}, 5, BLOCK).pick(spec("a"), tie, 0.0).replica == picks[5]


def test_precise_follows_kv_events_after_their_delay():
    router = PrefixPreciseRouter(2, {"kv_event_delay_ms": 100}, 0, BLOCK)
    hashes = prompt_block_hashes(spec("a"), BLOCK)
    router.kv_events(1, [("stored", hashes[:8])], now_s=1.0)
    even = states(kv=(0.5, 0.5))
    before = router.pick(spec("b"), even, 1.05)
    assert before.scores[0] == before.scores[1]  # not arrived yet: a tie
    after = router.pick(spec("b"), even, 1.1)
    assert after.replica == 1 and after.scores == pytest.approx((0 + 0.5 + 1, 2 * 0.8 + 1.5))
    router.kv_events(1, [("removed", hashes[:1])], now_s=2.0)  # block 0 evicted
    gone = router.pick(spec("b"), even, 2.1)
    assert gone.scores[0] == gone.scores[1]


def test_sends_do_not_feed_the_precise_index():
    router = PrefixPreciseRouter(2, {}, 0, BLOCK)
    send(router, spec("a"), 1)
    d = router.pick(spec("b"), states(), 0.0)
    assert d.scores[0] == d.scores[1]


def test_profiles_in_llm_ds_own_list_format_and_active_requests():
    plugins = [{"pluginRef": "decode-filter"}, {"pluginRef": "active-request-scorer",
                                                "weight": 5}, {"pluginRef": "max-score-picker"}]
    router = LlmDRouter(3, {"scorers": plugins}, 0, BLOCK)
    for i, replica in enumerate((0, 0, 1)):
        send(router, spec(f"r{i}"), replica)
    router.finished("r0", 0, 1.0)  # in flight: 1, 1, 0
    assert router.pick(spec("x"), states((0, 0, 0), (0, 0, 0)), 1.0).replica == 2


@pytest.mark.parametrize(("config", "field"), [
    ({"scorers": {"prefix-cache-scorer": -1}}, "router_config.scorers"),
    ({"scorers": {"magic-scorer": 1}}, "router_config.scorers"),
    ({"scorers": {}}, "router_config.scorers"),
    ({"kv_event_delay_ms": -5}, "router_config.kv_event_delay_ms"),
    ({"lru_capacity_per_server": 0}, "router_config.lru_capacity_per_server"),
    ({"tokens_per_block": 4}, "router_config")])
def test_bad_settings_name_their_field(config, field):
    with pytest.raises(ConfigError) as err:
        LlmDRouter(2, config, 0, BLOCK)
    assert err.value.field == field


def test_totals_say_how_much_of_the_prompts_were_cached_where_they_went():
    router = LlmDRouter(2, {}, 0, BLOCK)
    for rid in ("a", "b"):
        d = router.pick(spec(rid), states(), 0.0)
        send(router, spec(rid), d.replica)
    totals = router.totals()
    assert totals["name"] == "llm-d" and totals["decisions"] == 2
    assert (totals["matched_blocks"], totals["prompt_blocks"]) == (8, 20)
