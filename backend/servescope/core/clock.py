"""The engine's clocks. The step clock counts loop steps and is what `arrival_step` refers to;
the time clock advances by each step's priced time and is what `arrival_s` refers to; `iter`
counts engine iterations, one a record. `step_end_s` keeps when each iteration ended (8 bytes a
step, not a float object), which every request's token times refer to."""

from __future__ import annotations

from array import array


class Clock:
    __slots__ = ("iter", "step_clock", "step_end_s", "step_no", "time_s")

    def __init__(self, step_clock: bool) -> None:
        self.step_clock = step_clock  # arrivals are due by step (True) or by time
        self.step_no = 0
        self.time_s = 0.0
        self.iter = 0
        self.step_end_s = array("d")

    def tick(self, step_time_ms: float) -> None:
        """One synchronous step of `step_time_ms` has ended."""
        self.step_no += 1
        self.iter += 1
        self.time_s += step_time_ms / 1000.0

    def tick_many(self, num_steps: int, end_s: float) -> None:
        """`num_steps` steps have ended at `end_s` (a decode stretch)."""
        self.step_no += num_steps
        self.iter += num_steps
        self.time_s = end_s

    def jump_to(self, arrival_step: int, arrival_s: float, force: bool = False,
                wake_s: float | None = None) -> None:
        """Move to an arrival's time on the arrivals' clock: when forced, at least one step on
        (step clock), or (time clock) to `wake_s` if that comes first."""
        if self.step_clock:
            self.step_no = max(self.step_no + force, arrival_step)
            return
        target = arrival_s
        if wake_s is not None and self.time_s < wake_s < target:
            target = wake_s
        self.time_s = max(self.time_s, target)
