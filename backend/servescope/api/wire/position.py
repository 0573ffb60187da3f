"""A place in a run's records on one of its three clocks, which is what a seek names:

    Clock.ITER  the record's index: the engine iteration, the stream's own count (`iter`)
    Clock.STEP  the engine's loop step, which `arrival_step` counts (an idle jump skips steps)
    Clock.TIME  simulated time in seconds (`time_s`), where a record starts
"""

from __future__ import annotations

import enum
from typing import NamedTuple


class Clock(enum.StrEnum):
    ITER = "iter"
    STEP = "step"
    TIME = "time_s"


class Position(NamedTuple):
    clock: Clock
    value: float


def at_iter(iter_: int) -> Position:
    return Position(Clock.ITER, float(iter_))


def at_time(time_s: float) -> Position:
    return Position(Clock.TIME, time_s)
