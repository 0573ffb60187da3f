"""A track's leaps, on the event loop's side: the scout process (api/leaps/scout.py) it asks for
them, how far the scout has run ahead, and the stretch of records the current leap has stored past
the track's head. A track keeps its own records from 0 to its head; a leap's run from `first`
(its keyframe after first - 1) to `last`; once the head reaches first - 1 the two join. While a
seek waits on the scout, the track's own simulation is held (`hold`): on a machine short of CPUs
it only slows the scout a viewer is waiting for."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from servescope.api.leaps.scout import LEAP_AHEAD, Job, Message, Scout
from servescope.api.wire.position import Clock, Position, at_iter
from servescope.core.request import RequestSpec

# The longest a track holds its own simulation for one seek, unless told its seeks' own wait
# (the server passes job_timeout_s: a hold shorter than the wait lets the track compete with
# the scout the seek still waits on); this is the server's default job_timeout_s
# (api/settings.py)
MAX_HOLD_S = 120.0


@dataclass(frozen=True)
class LeapRange:
    first: int
    first_start_s: float
    first_step: int
    last: int
    last_start_s: float
    last_step: int
    done: bool  # it reached the run's end


class Leaping:
    def __init__(self, job: Job, specs: list[RequestSpec], max_hold_s: float = MAX_HOLD_S) -> None:
        self.job, self.specs = job, specs
        self.max_hold_s = max_hold_s  # the longest one seek holds the track (see MAX_HOLD_S)
        self.scout: Scout | None = None
        self.reach = -1  # the scout's last record
        self.reach_s = float("-inf")  # and its start
        self.reach_done = False  # the scout has run the engine to its end
        self.range: LeapRange | None = None
        self.error: str | None = None  # why the scout failed
        self.ended = False  # its process has stopped
        self.waited: Position | None = None  # a seek's target the scout has not answered yet
        self.hold_until = 0.0  # (monotonic) when the track stops holding for it
        self.idle = threading.Event()  # set: no seek waits on the scout
        self.idle.set()

    def start(self, on_message: Callable[[Message], None]) -> None:
        """(On the track's thread, once its first records are out: see Scout.)"""
        self.scout = Scout(self.job, self.specs, on_message)

    def rss(self) -> int:
        return self.scout.rss() if self.scout is not None and not self.ended else 0

    def stop(self) -> None:
        if self.scout is not None:
            self.scout.stop()
        self._release()

    def hear(self, msg: Message, head: int) -> None:
        """A message of the scout's (on the loop)."""
        kind = msg[0]
        if kind == "reach":
            self.reach, self.reach_s, self.reach_done = msg[1:4]
        elif kind == "leap":
            self.range = LeapRange(*msg[1:])
        elif kind == "error":
            self.error = msg[1]
        elif kind == "ended":
            self.ended = True
        self.passed(head)
        waited = self.waited
        if waited is not None and (self.ended or self.error is not None or self.has(waited)):
            self._release()

    def passed(self, head: int) -> None:
        """The track's own records are stored up to `head`: a leap they reach is let go."""
        if self.range is not None and head >= self.range.last:
            self.range = None

    def ask(self, target: Position) -> None:
        """A leap to `target`; until it holds the record there, the track's own simulation
        is held (at most max_hold_s for one target)."""
        if self.scout is None or self.ended or self.error is not None:
            return
        self.scout.ask(target)
        if self.has(target):
            self._release()
        elif self.waited != target:
            self.waited, self.hold_until = target, time.monotonic() + self.max_hold_s
            self.idle.clear()

    def hold(self) -> None:
        """(On the track's thread, between its records) wait while a seek waits on the scout."""
        if not self.idle.is_set():
            self.idle.wait(max(0.0, self.hold_until - time.monotonic()))

    def _release(self) -> None:
        self.waited = None
        self.idle.set()

    def follow(self, pos: int) -> None:
        """Keep the leap that holds `pos` (a viewer playing in it) LEAP_AHEAD records ahead."""
        r = self.range
        if r is not None and not r.done and r.first <= pos <= r.last < pos + LEAP_AHEAD // 2:
            self.ask(at_iter(r.last))

    def end_of(self, it: int, head: int) -> int | None:
        """The last record of the stored stretch that record `it` (or the keyframe after it)
        belongs to; None when it is in neither."""
        r = self.range
        end = head if it <= head else None
        if r is None:
            return end
        if end is not None:
            return max(end, r.last) if end >= r.first - 1 else end
        return r.last if r.first - 1 <= it <= r.last else None

    def has(self, target: Position) -> bool:
        """Whether the current leap holds the record at `target`."""
        r, (clock, value) = self.range, target
        if r is None:
            return False
        if clock is Clock.TIME:
            return r.first_start_s <= value and (r.last_start_s > value or r.done)
        if clock is Clock.ITER:
            return r.first <= value <= r.last
        return r.first_step <= value and (r.last_step >= value or r.done)
