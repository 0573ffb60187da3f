"""Engine checkpoints: an engine's whole state as bytes, to simulate on from there later (a
seek past what a session has stored starts from the nearest one: api/scout.py). Resuming from
a checkpoint gives the very steps the engine would have taken (tests/core/test_checkpoint.py).
The step-time function is rebuilt from the config on load (a closure does not pickle)."""

from __future__ import annotations

import pickle

from servescope.core import cost_model
from servescope.core.engine import Engine
from servescope.core.step_time import placeholder_step_time_ms


def dump_engine(engine: Engine) -> bytes:
    step_time = engine.step_time
    engine.step_time = placeholder_step_time_ms
    try:
        return pickle.dumps(engine, protocol=pickle.HIGHEST_PROTOCOL)
    finally:
        engine.step_time = step_time


def load_engine(blob: bytes) -> Engine:
    """An engine from `dump_engine` of one built with the default step time."""
    engine = pickle.loads(blob)  # our own bytes (the scout's), never a client's
    assert isinstance(engine, Engine)
    if engine.priced:
        engine.step_time = cost_model.make_step_time(engine.config)
    return engine


def advance_to(engine: Engine, iter_: int) -> None:
    """Simulate without records until the engine's next record is record `iter_` (or the end)."""
    while engine.iter < iter_ and engine.advance_unrecorded(iter_ - engine.iter):
        pass
