"""The acceptance model: per-position geometry, seeding per request, defaults and sources."""

from __future__ import annotations

import numpy as np
import pytest

from servescope.core.acceptance import (
    DEFAULT_RATES,
    AcceptanceModel,
    describe_source,
    make_acceptance,
)


def counts(model: AcceptanceModel, request_id: str, steps: int, drafts: int) -> list[int]:
    return [model.accepted(request_id, i, drafts) for i in range(steps)]


def test_rate_one_then_zero_accepts_exactly_the_first_positions() -> None:
    model = AcceptanceModel("eagle3", 4, (1.0, 1.0, 0.0, 1.0))
    # position 3's rate is 1 but it follows a rejection at 2, so never more than 2
    assert set(counts(model, "r", 50, 4)) == {2}
    assert set(counts(model, "r", 50, 1)) == {1}  # fewer drafts than K: capped


def test_a_rejection_ends_the_run_of_accepted_positions() -> None:
    """P(accepted >= i) is the product of the first i rates (2000 draws, generous bounds)."""
    model = AcceptanceModel("eagle", 3, (0.5, 1.0, 0.5))
    drawn = counts(model, "x", 2000, 3)
    share = {k: sum(1 for a in drawn if a >= k) / len(drawn) for k in (1, 2, 3)}
    assert 0.45 < share[1] < 0.55
    assert share[2] == share[1]  # position 1 always follows position 0
    assert 0.2 < share[3] < 0.3
    assert 0 in drawn and 3 in drawn


def test_rates_past_the_list_repeat_the_last() -> None:
    model = AcceptanceModel("mtp", 5, (1.0,))
    assert counts(model, "a", 10, 5) == [5] * 10


def test_a_request_draws_the_same_whatever_else_is_asked_and_in_what_order() -> None:
    alone = AcceptanceModel("eagle3", 3, (0.7,), seed=7)
    mixed = AcceptanceModel("eagle3", 3, (0.7,), seed=7)
    for i in reversed(range(40)):  # another request first, then this one backwards
        mixed.accepted("other", i, 3)
    backwards = [mixed.accepted("r1", i, 3) for i in reversed(range(40))][::-1]
    assert backwards == counts(alone, "r1", 40, 3)


def test_a_longer_draw_keeps_the_earlier_steps() -> None:
    model = AcceptanceModel("eagle3", 3, (0.6,), seed=1)
    first = counts(model, "r", 10, 3)
    model.accepted("r", 500, 3)  # forces a longer draw
    assert counts(model, "r", 10, 3) == first


def test_seeds_and_requests_draw_differently() -> None:
    a = counts(AcceptanceModel("eagle3", 3, (0.6,), seed=1), "r", 64, 3)
    b = counts(AcceptanceModel("eagle3", 3, (0.6,), seed=2), "r", 64, 3)
    c = counts(AcceptanceModel("eagle3", 3, (0.6,), seed=1), "s", 64, 3)
    assert a != b and a != c


def test_mean_acceptance_length_is_one_plus_the_cumulative_products() -> None:
    assert AcceptanceModel("x", 3, (0.5,)).mean_acceptance_length() == pytest.approx(1.875)


def test_eagle3_default_reproduces_the_cited_measurement() -> None:
    """vLLM issue #26191: 12208 accepted over 4816 drafts at K = 7 (within 0.1 token)."""
    model = AcceptanceModel("eagle3", 7, DEFAULT_RATES["eagle3"].rates)
    assert model.mean_acceptance_length() - 1 == pytest.approx(12208 / 4816, abs=0.1)


def test_ngram_default_reproduces_the_cited_cumulative_shares() -> None:
    """vLLM PR #24344: 0.81, 0.74, 0.70, 0.68, 0.66 of the drafts reach tokens 0..4."""
    model = AcceptanceModel("ngram", 5, DEFAULT_RATES["ngram"].rates)
    reached = [float(x) for x in np.cumprod(model.rates)]
    assert reached == pytest.approx([0.81, 0.74, 0.70, 0.68, 0.66], abs=0.015)


def test_bad_rates_are_refused() -> None:
    with pytest.raises(ValueError, match="rates"):
        AcceptanceModel("eagle3", 3, (1.2,))
    with pytest.raises(ValueError, match="rates"):
        AcceptanceModel("eagle3", 3, ())


def test_the_source_says_where_the_rates_came_from() -> None:
    model, source = make_acceptance("eagle3", 3, None)
    assert model is not None and source.startswith("model: eagle3 defaults (")
    model, source = make_acceptance("eagle3", 3, (0.9,))
    assert model is not None and "acceptance_rates" in source
    model, source = make_acceptance("draft_model", 3, None)
    assert model is None and source.startswith("none")
    assert describe_source("model: x", 4, 4) == "recorded spec_accepted"
    assert describe_source("model: x", 4, 0) == "model: x"
    assert "2 of 4" in describe_source("model: x", 4, 2)
