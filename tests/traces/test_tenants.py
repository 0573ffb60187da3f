"""The multi-tenant, multi-turn generator (traces/tenants.py) on hand-made shapes."""

import numpy as np
import pytest

from servescope.scenarios.presets import generate as preset_generate
from servescope.traces.synthetic import generate
from servescope.traces.tenants import multi_tenant


def draw(n=60, seed=3, **kw):
    return multi_tenant(np.random.default_rng(seed), n, kw.pop("rate_per_s", 2.0), **kw)


def test_a_turn_is_sent_when_the_last_would_end_plus_think_time():
    # one tenant, system prompt 100, user messages 10, answers 5, no think time: turn 1 sends
    # 110 tokens (0.11 s at 1000 tokens/s) and decodes 5 x 20 ms: turn 2 follows 0.21 s later
    specs = draw(3, num_tenants=1, system_prompt_len=100, turns=3, user_len=10, output_len=5,
                 rate_per_s=1e-3,  # the next session starts long after
                 think_s=0.0, tpot_ms=20.0, prefill_tokens_per_s=1000.0)
    assert [s.session_id for s in specs] == ["t-s0"] * 3
    assert [s.prompt_len for s in specs] == [110, 125, 140]  # + answer 5 + message 10 a turn
    assert [s.arrival_s for s in specs] == pytest.approx([0.0, 0.21, 0.21 + 0.125 + 0.1])


def test_turns_extend_their_session_and_tenants_share_their_system_prompt():
    specs = draw(200, num_tenants=3)
    by_session: dict[str, list] = {}
    for spec in specs:
        by_session.setdefault(spec.session_id, []).append(spec)
        assert spec.prompt_len == sum(n for _, n in spec.prefix)  # every token is a segment
    for turns in by_session.values():
        assert len({t.prefix[0] for t in turns}) == 1  # one tenant a session
        for earlier, later in zip(turns, turns[1:], strict=False):
            assert later.prefix[:len(earlier.prefix)] == earlier.prefix
            answer = later.prefix[len(earlier.prefix)][0]  # the earlier turn's answer
            assert answer.endswith(f"-a{len(earlier.prefix) // 2 - 1}")
    systems = {s.prefix[0][0] for s in specs}
    assert len(systems) == 3 and len(by_session) > 3  # tenants are shared by several sessions
    arrivals = [s.arrival_s for s in specs]
    assert arrivals == sorted(arrivals)


def test_more_requests_keep_the_first_ones():
    # the first n turns of the traffic do not depend on how many are asked for
    few, many = draw(40), draw(90)
    assert [(s.id, s.arrival_s, s.prefix) for s in few] == \
        [(s.id, s.arrival_s, s.prefix) for s in many[:40]]


def test_seeded_and_reachable_by_name_from_presets():
    by_name = generate("multi_tenant", 5, num_requests=30, rate_per_s=1.0)
    assert by_name == multi_tenant(np.random.default_rng(5), 30, 1.0)
    assert by_name != generate("multi_tenant", 6, num_requests=30, rate_per_s=1.0)
    preset = preset_generate({"name": "multi_tenant", "seed": 5, "num_requests": 30,
                              "rate_per_s": 1.0})
    assert preset == by_name


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="rate_per_s"):
        draw(5, rate_per_s=0)
    with pytest.raises(ValueError, match="think_s"):
        draw(5, think_s=-1.0)
