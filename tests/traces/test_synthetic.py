import numpy as np
import pytest

from servescope.traces import synthetic


def test_poisson_rate_and_lengths():
    specs = synthetic.poisson(np.random.default_rng(1), 5000, 40.0, (10, 20), 7)
    gaps = np.diff([s.arrival_s for s in specs])
    assert 1 / gaps.mean() == pytest.approx(40.0, rel=0.05)
    assert np.std(gaps) / np.mean(gaps) == pytest.approx(1.0, rel=0.08)
    assert {s.prompt_len for s in specs} == set(range(10, 21))
    assert {s.output_len for s in specs} == {7}


@pytest.mark.parametrize("burstiness", [0.25, 4.0])
def test_gamma_burstiness_sets_the_coefficient_of_variation(burstiness):
    specs = synthetic.gamma(np.random.default_rng(2), 8000, 10.0, burstiness)
    gaps = np.diff([s.arrival_s for s in specs])
    assert np.std(gaps) / np.mean(gaps) == pytest.approx(1 / np.sqrt(burstiness), rel=0.1)
    assert 1 / gaps.mean() == pytest.approx(10.0, rel=0.1)


def test_closed_loop_never_exceeds_its_concurrency_under_its_own_latency_model():
    tpot_ms, prefill = 20.0, 10_000.0
    specs = synthetic.closed_loop(np.random.default_rng(3), 300, 4, tpot_ms=tpot_ms,
                                  prefill_tokens_per_s=prefill)
    ends = [s.arrival_s + s.prompt_len / prefill + s.output_len * tpot_ms / 1000 for s in specs]
    for spec in specs:
        in_flight = sum(1 for o, e in zip(specs, ends, strict=True)
                        if o.arrival_s <= spec.arrival_s < e - 1e-9)
        assert in_flight <= 4
    assert sum(1 for s in specs if s.arrival_s == 0.0) == 4


def test_mixed_long_fraction():
    specs = synthetic.mixed_long(np.random.default_rng(4), 4000, 5.0, long_fraction=0.2)
    share = np.mean([s.prompt_len >= 8192 for s in specs])
    assert share == pytest.approx(0.2, abs=0.03)


def test_lesson_workload_shape_and_determinism():
    a, b = synthetic.generate("lesson"), synthetic.generate("lesson", seed=0)
    assert a == b and len(a) == 60
    assert {s.prompt_len for s in a} <= {128, 256, 512, 2048, 8192}
    assert all(50 <= s.output_len <= 300 for s in a)
    rate = 59 / (a[-1].arrival_s - a[0].arrival_s)
    assert 20 < rate < 70
    assert synthetic.generate("lesson", seed=1) != a


def test_same_seed_same_workload_and_unknown_names_refused():
    assert synthetic.generate("poisson", 5, num_requests=20, rate_per_s=3) == \
        synthetic.generate("poisson", 5, num_requests=20, rate_per_s=3)
    with pytest.raises(ValueError):
        synthetic.generate("nope")
