"""The roofline's plain-list pricing (rows_ms, numpy_sum) gives numpy's bits exactly: an
unrecorded step must cost what the same step recorded costs, to the last bit."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from servescope.core import cost_model
from servescope.core.config import EngineConfig
from servescope.core.step_cost import RooflineStepTime, numpy_sum

L8B = "meta-llama/Llama-3.1-8B-Instruct"
L70B = "meta-llama/Llama-3.3-70B-Instruct"  # at TP 4: all-reduce terms
MIXTRAL = "mistralai/Mixtral-8x7B-Instruct-v0.1"  # MoE: expert terms

floats = st.floats(min_value=0.0, max_value=1e6, allow_nan=False, allow_infinity=False)


@settings(max_examples=300, deadline=None)
@given(st.lists(floats, max_size=600), st.integers(0, 20))
def test_numpy_sum_is_numpys_sum_bit_for_bit(values: list[float], lo: int) -> None:
    lo = min(lo, len(values))
    assert numpy_sum(values, lo, len(values) - lo) == float(np.array(values[lo:]).sum())


def test_numpy_sum_is_not_a_left_to_right_sum() -> None:
    # 1e16 + 1 + ... : left to right every 1.0 is lost; numpy's 8 accumulators keep some
    values = [1e16] + [1.0] * 15
    left_to_right = 0.0
    for value in values:
        left_to_right += value
    assert numpy_sum(values, 0, 16) == float(np.array(values).sum()) != left_to_right


def step_time(model: str, **kw: object) -> RooflineStepTime:
    fn = cost_model.make_step_time(EngineConfig(model=model, gpu="H100",  # type: ignore[arg-type]
                                                max_model_len=8192, **kw))
    assert isinstance(fn, RooflineStepTime)
    return fn


PRICED = [step_time(L8B), step_time(L70B, tensor_parallel_size=4), step_time(MIXTRAL,
                                                                              tensor_parallel_size=2)]
# decodes (1 token) among prefill chunks, as a step that admits while the batch decodes
rows = st.lists(st.tuples(st.one_of(st.just(1), st.integers(1, 2048)), st.integers(0, 8192)),
                min_size=0, max_size=300)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(range(len(PRICED))), rows, st.booleans())
def test_rows_ms_prices_a_step_as_the_numpy_call_does(which: int, pairs: list[tuple[int, int]],
                                                      decodes: bool) -> None:
    fn = PRICED[which]
    n = [1 if decodes else k for k, _ in pairs]  # all decodes take the call's other branch
    start = [c for _, c in pairs]
    expected = fn(np.array(n, np.int64), np.array(start, np.int64))
    assert fn.rows_ms(n, start) == expected
