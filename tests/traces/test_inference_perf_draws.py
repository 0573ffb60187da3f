"""inference-perf's draws, each rule on a hand-made case: its two length samplers
(inference_perf/utils/numeric/distribution/utils.py) and its load timers (load_timer.py)."""

from __future__ import annotations

import numpy as np
import pytest

from servescope.traces.errors import TraceFormatError
from servescope.traces.inference_perf_config import Distribution
from servescope.traces.inference_perf_draws import (
    constant_offsets,
    generate_lengths,
    poisson_offsets,
    sample_lengths,
)


def _rng():
    return np.random.default_rng(0)


@pytest.mark.parametrize("sampler", [generate_lengths, sample_lengths])
def test_fixed_is_the_mean_truncated(sampler):
    assert set(sampler(Distribution(min=1, max=9, mean=7.9, type="fixed"), 5, _rng(), "d")) \
        == {7}  # int(mean), not clipped nor rounded


def test_uniform_reaches_max_only_in_sample_from_distribution():
    dist = Distribution(min=3, max=4, type="uniform")
    # rng.uniform(min, max + 1): 4.5..5 rounds to 5, clipped to 4; half the draws are 4
    assert set(sample_lengths(dist, 400, _rng(), "d")) == {3, 4}
    # generate_distribution draws on [min, max): only values under 3.5 round to 3
    drawn = generate_lengths(dist, 400, _rng(), "d")
    assert set(drawn) == {3, 4} and abs((drawn == 3).mean() - 0.5) < 0.1


def test_lognormal_is_shifted_by_min_only_in_generate_distribution():
    dist = Distribution(min=1000, max=100_000, mean=1100, std_dev=10, type="lognormal")
    # generate: lognormal of mean 100 shifted by 1000 -> about 1100
    assert abs(generate_lengths(dist, 2000, _rng(), "d").mean() - 1100) < 5
    # sample: moment-matched to mean 1100 directly (no shift), then clipped
    assert abs(sample_lengths(dist, 2000, _rng(), "d").mean() - 1100) < 5
    wide = Distribution(min=1000, max=100_000, mean=1100, std_dev=500, type="lognormal")
    # with a wide spread, the unshifted draws fall below min and are clipped up to it
    assert (sample_lengths(wide, 2000, _rng(), "d") == 1000).mean() > 0.1
    assert (generate_lengths(wide, 2000, _rng(), "d") == 1000).mean() < 0.05  # only x < 0.5


def test_poisson_draws_around_the_mean_and_skew_normal_leans():
    counts = sample_lengths(Distribution(min=0, max=1000, mean=40, type="poisson"), 4000,
                            _rng(), "d")
    assert abs(counts.mean() - 40) < 1 and abs(counts.var() - 40) < 5
    right = sample_lengths(Distribution(min=0, max=10_000, mean=500, std_dev=100,
                                        type="skew_normal", skew=4), 4000, _rng(), "d")
    assert right.mean() > 560  # mean + std * delta * sqrt(2/pi), delta ~ 0.97


def test_the_random_datagen_refuses_what_generate_distribution_refuses():
    with pytest.raises(TraceFormatError) as err:
        generate_lengths(Distribution(type="skew_normal"), 3, _rng(), "data.input_distribution")
    assert err.value.field == "data.input_distribution.type"
    with pytest.raises(TraceFormatError) as err:
        generate_lengths(Distribution(min=10, max=20, mean=50), 3, _rng(), "d")
    assert err.value.field == "d.mean"


def test_constant_timer_sends_int_rate_x_duration_ending_at_the_duration():
    offsets = constant_offsets(1.5, 3, _rng())
    assert len(offsets) == 4 and offsets[-1] == pytest.approx(3.0)
    assert np.all(np.diff(offsets) > 0) and len(constant_offsets(0.2, 4, _rng())) == 0


def test_poisson_timer_sends_its_count_a_second_at_a_time():
    offsets = poisson_offsets(3.0, 30, _rng())
    assert len(offsets) == 30 and np.all(np.diff(offsets) >= 0)
    # each second's requests are spread over that second and its last one lands on its end
    seconds = np.ceil(offsets - 1e-9)
    for second in np.unique(seconds)[:-1]:
        assert offsets[seconds == second].max() == pytest.approx(second)
