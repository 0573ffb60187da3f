"""Engine checkpoints: an engine's state, to simulate on from there later (a seek past what a
session has stored starts from the nearest one: api/leaps/scout.py). Resuming from a checkpoint
gives the very steps the engine would have taken (tests/core/test_checkpoint.py).

What only grows or only shrinks is left out and counted instead: the finished requests, the
clock of step ends and the requests yet to arrive. `resume` takes them from the engine the
checkpoint was taken of (however far it has run since) and from its arrivals as they were at
the start; a checkpoint of a 200,000-request run is then a few MB and a few ms, not 90 MB and
0.4 s. The step-time function is rebuilt from the config (a closure does not pickle)."""

from __future__ import annotations

import io
import pickle
from array import array
from typing import Any, NamedTuple

from servescope.core import cost_model
from servescope.core.arrivals import Arrivals
from servescope.core.engine import Engine
from servescope.core.request import RequestSpec
from servescope.core.step_time import placeholder_step_time_ms

CLOCK = "step_end_s"  # how the clock (which every live request refers to) is named in one


class Checkpoint(NamedTuple):
    iter: int  # the engine's next record
    num_done: int  # finished requests
    num_steps: int  # step ends on the clock
    num_pending: int  # requests yet to arrive
    blob: bytes  # the rest


class _Pickler(pickle.Pickler):
    def __init__(self, file: io.BytesIO, clock: array[float]) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.clock = clock

    def persistent_id(self, obj: Any) -> str | None:
        return CLOCK if obj is self.clock else None


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, clock: array[float]) -> None:
        super().__init__(file)
        self.clock = clock

    def persistent_load(self, pid: Any) -> Any:
        assert pid == CLOCK
        return self.clock


def take(engine: Engine) -> Checkpoint:
    kept = engine.step_time, engine.done_requests, engine.arrivals
    engine.step_time, engine.done_requests = placeholder_step_time_ms, []
    engine.arrivals = Arrivals((), engine.arrivals.step_clock)
    try:
        out = io.BytesIO()
        _Pickler(out, engine.clock.step_end_s).dump(engine)
    finally:
        engine.step_time, engine.done_requests, engine.arrivals = kept
    return Checkpoint(engine.clock.iter, len(engine.done_requests), len(engine.clock.step_end_s),
                      len(engine.arrivals), out.getvalue())


def resume(checkpoint: Checkpoint, source: Engine, arrivals: list[RequestSpec]) -> Engine:
    """An engine at `checkpoint`, taken of `source` (built with the default step time; it may
    have run on since), whose requests in arrival order were `arrivals` at its start."""
    blob = io.BytesIO(checkpoint.blob)
    engine = _Unpickler(blob, source.clock.step_end_s[:checkpoint.num_steps]).load()  # ours
    assert isinstance(engine, Engine)
    engine.done_requests = source.done_requests[:checkpoint.num_done]
    engine.arrivals.keep_last(arrivals, checkpoint.num_pending)
    if engine.priced:
        engine.step_time = cost_model.make_step_time(engine.config)
    return engine


def arrivals(engine: Engine) -> list[RequestSpec]:
    """An engine's requests in arrival order (before its first step: the ones yet to arrive)."""
    return engine.arrivals.specs()


def advance_to(engine: Engine, iter_: int) -> None:
    """Simulate without records until the engine's next record is record `iter_` (or the end)."""
    while engine.iter < iter_ and engine.advance_unrecorded(iter_ - engine.iter):
        pass
