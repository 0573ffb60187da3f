"""The capture driver's arrivals (no vLLM needed): requests join in arrival order, ties in list
order, only once due, and the recorder is told each step before its requests join."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from servescope.capture.driver import _Arrivals


class FakeScheduler:
    def __init__(self) -> None:
        self.servescope_recorder = SimpleNamespace(step=None)
        self.added: list[tuple[str, int, int | None]] = []

    def add_request(self, request: tuple[str, int]) -> None:
        self.added.append((*request, self.servescope_recorder.step))


class FakeFactory:
    def make(self, row: dict[str, Any], arrival_index: int) -> tuple[str, int]:
        return row["id"], arrival_index


def test_requests_join_once_due_in_arrival_order() -> None:
    rows = [{"id": "late", "arrival_step": 5}, {"id": "a", "arrival_step": 0},
            {"id": "none"}, {"id": "b", "arrival_step": 0}, {"id": "mid", "arrival_step": 2}]
    scheduler = FakeScheduler()
    arrivals = _Arrivals(scheduler, rows, FakeFactory())
    assert arrivals and arrivals.next_step() == 0
    arrivals.admit(0)
    assert scheduler.added == [("a", 0, 0), ("none", 1, 0), ("b", 2, 0)]
    assert arrivals.next_step() == 2
    arrivals.admit(1)
    assert len(scheduler.added) == 3 and scheduler.servescope_recorder.step == 1
    arrivals.admit(7)
    assert scheduler.added[3:] == [("mid", 3, 7), ("late", 4, 7)]
    assert not arrivals


def test_a_scheduler_without_a_recorder_still_takes_arrivals() -> None:
    scheduler = FakeScheduler()
    del scheduler.servescope_recorder
    added: list[Any] = []
    scheduler.add_request = added.append  # type: ignore[method-assign]
    _Arrivals(scheduler, [{"id": "x", "arrival_step": 1}], FakeFactory()).admit(1)
    assert added == [("x", 0)]
