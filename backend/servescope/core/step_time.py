"""A placeholder step time for runs without a model and GPU: NOT a cost model.

It only gives the time clock a plausible shape (a fixed cost per step plus a cost per token);
runs that name a model and a GPU are priced by the roofline cost model instead.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

StepTimeFn = Callable[[np.ndarray, np.ndarray], float]

PLACEHOLDER_BASE_MS = 10.0  # the time model the shared vLLM reference recordings used
PLACEHOLDER_PER_TOKEN_MS = 0.02


def placeholder_step_time_ms(num_scheduled: np.ndarray, num_context: np.ndarray) -> float:
    """Placeholder: 10 ms a step plus 0.02 ms per scheduled token; ignores the context."""
    return PLACEHOLDER_BASE_MS + PLACEHOLDER_PER_TOKEN_MS * float(num_scheduled.sum())


def rows_step_ms(step_time: StepTimeFn, num_scheduled: list[int], num_context: list[int]
                 ) -> float:
    """A step's time from its rows as plain lists: the function's own `rows_ms` where it has
    one (the cost model's: the same bits as its call on arrays, without numpy's cost per call
    on a few rows), else its call."""
    rows_ms = getattr(step_time, "rows_ms", None)
    if rows_ms is not None:
        return float(rows_ms(num_scheduled, num_context))
    return float(step_time(np.array(num_scheduled, np.int64), np.array(num_context, np.int64)))


def decode_steps_ms(step_time: StepTimeFn, start: np.ndarray, num_steps: int) -> np.ndarray:
    """Step times of `num_steps` steps in which each row decodes one token, row i from
    position start[i] + j at step j: one call when the function prices runs itself (the cost
    model), else one call a step."""
    num_requests = len(start)
    context_sums = int(start.sum()) + num_requests * np.arange(num_steps, dtype=np.int64)
    vector = getattr(step_time, "decode_steps_ms", None)
    if vector is not None:
        priced: np.ndarray = vector(num_requests, context_sums)
        return priced
    ones = np.ones(num_requests, np.int64)
    return np.array([step_time(ones, start + j) for j in range(num_steps)], np.float64)
