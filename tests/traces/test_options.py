import numpy as np
import pytest

from servescope.core.request import RequestSpec
from servescope.traces.options import TraceOptions, apply_options, reservoir


def specs(n=100):
    return [RequestSpec(f"r{i}", 10 + i, 5, arrival_s=float(i), prefix=(("s", 8),))
            for i in range(n)]


def test_window_rebases_and_stops_early():
    consumed = []

    def stream():
        for s in specs():
            consumed.append(s.id)
            yield s

    out = list(apply_options(stream(), TraceOptions(window_s=(10.0, 19.5))))
    assert [s.id for s in out] == [f"r{i}" for i in range(10, 20)]
    assert out[0].arrival_s == 0.0 and out[-1].arrival_s == 9.0
    assert len(consumed) == 21  # stopped at the first arrival past the end


def test_scaling_and_limit():
    out = list(apply_options(specs(), TraceOptions(arrival_scale=2.0, length_scale=0.5,
                                                   limit=3)))
    assert [(s.arrival_s, s.prompt_len, s.output_len, s.prefix) for s in out] == [
        (0.0, 5, 2, (("s", 4),)), (2.0, 6, 2, (("s", 4),)), (4.0, 6, 2, (("s", 4),))]


def test_sample_is_uniform_ordered_and_seeded():
    hits = np.zeros(1000)
    for seed in range(400):
        kept = reservoir(specs(1000), 50, np.random.default_rng(seed))
        ids = [int(s.id[1:]) for s in kept]
        assert ids == sorted(ids) and len(set(ids)) == 50
        hits[ids] += 1
    # each item is kept with probability 50/1000: 20 of 400 runs on average
    assert hits.mean() == pytest.approx(20.0)
    assert hits[:500].sum() == pytest.approx(hits[500:].sum(), rel=0.1)
    a = list(apply_options(specs(), TraceOptions(sample_n=7, seed=3)))
    assert a == list(apply_options(specs(), TraceOptions(sample_n=7, seed=3)))


def test_sample_larger_than_the_trace_keeps_everything():
    assert len(list(apply_options(specs(5), TraceOptions(sample_n=50)))) == 5


@pytest.mark.parametrize("bad", [dict(arrival_scale=0), dict(limit=0), dict(window_s=(5, 1))])
def test_bad_options_refused(bad):
    with pytest.raises(ValueError):
        TraceOptions(**bad)
