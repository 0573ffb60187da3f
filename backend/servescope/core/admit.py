"""Requests joining the engine: the ones due now admitted (or refused), waiting ones no step can
ever run refused, the idle clock jumped to the next arrival, and the synchronous loop's plan.

At a fleet's gate (core/arrivals.py) the engine pauses instead of admitting or jumping: its
loops answer as at the end, and it keeps what the interrupted plan had gathered (`Held`) so the
plan resumes where it stopped, as if the gate had been the next request all along.
"""

from __future__ import annotations

from typing import Protocol

from servescope.core import arrivals as admission
from servescope.core.arrivals import Arrivals
from servescope.core.clock import Clock
from servescope.core.config import EngineConfig
from servescope.core.kv_cache_manager import KVCacheManager
from servescope.core.request import Request, RequestStatus
from servescope.core.scheduler.base import Scheduler, SchedulerOutput

# what an interrupted plan had gathered: arrivals, refusals, and its empty plan when it
# stopped waiting for the next arrival (None: it stopped before planning)
Held = tuple[list[str], list[tuple[str, str]], SchedulerOutput | None]
Planned = tuple[SchedulerOutput, list[str], list[tuple[str, str]]]


class Engine(Protocol):
    """What admitting reads and changes of the engine (core/engine.py's Engine)."""

    config: EngineConfig
    scheduler: Scheduler
    clock: Clock
    arrivals: Arrivals
    rejected: list[tuple[str, str]]
    num_arrived: int
    held: Held | None

    @property
    def kv(self) -> KVCacheManager: ...

    @property
    def done(self) -> bool: ...


def now(engine: Engine) -> float:
    """The moment arrivals are due by: the step on the step clock, else the time."""
    clock = engine.clock
    return clock.step_no if clock.step_clock else clock.time_s


def plan_sync(engine: Engine) -> Planned | None:
    """Admit what has arrived and schedule the next step, jumping idle time; None at the end
    (or paused at a gate, with `engine.held` set)."""
    arrivals, rejected, output = engine.held or ([], [], None)
    engine.held = None
    if output is None and engine.done:
        return None
    scheduler = engine.scheduler
    while True:
        if output is not None:  # an empty plan: on to the next arrival (or the policy's wake)
            if not engine.arrivals.pending:
                if wait_for_kv(engine):
                    output = None
                    continue
                reject_stuck(engine, rejected)
                return output, arrivals, rejected
            if not jump(engine, force=True):
                engine.held = arrivals, rejected, output
                return None
        if (not scheduler.has_unfinished and not jump(engine)) or engine.arrivals.gate_due(
                now(engine)):
            engine.held = arrivals, rejected, None
            return None
        admit_due(engine, arrivals, rejected)
        scheduler.more_arrivals = bool(engine.arrivals.pending)
        scheduler.now_s = engine.clock.time_s
        output = scheduler.schedule()
        # a plan that only admits remote-prefilled requests (their blocks allocated, their KV
        # loading: core/kv_connector.py D1) is a step of no tokens, as vLLM runs it
        if (output.entries or output.preempted or output.new_blocks
                or not scheduler.has_unfinished):
            return output, arrivals, rejected


def wait_for_kv(engine: Engine) -> bool:
    """With no arrival to come, move the clock to the end of the next KV load in flight (a
    P/D decode engine, core/kv_connector.py); False when none is in flight."""
    scheduler = engine.scheduler
    wake = scheduler.wake_s() if scheduler.connector is not None else None
    if wake is None or wake <= engine.clock.time_s:
        return False
    engine.clock.time_s = wake
    return True


def jump(engine: Engine, force: bool = False) -> bool:
    """Move the workload's clock to the next arrival (when forced, at least one step on, or on
    the time clock to the policy's own wake-up if that comes first). False, unmoved, where the
    next arrival is the fleet's gate (and no wake-up comes before it)."""
    clock, pending = engine.clock, engine.arrivals
    spec = pending.next()
    assert spec is not None
    wake = engine.scheduler.wake_s() if force and not clock.step_clock else None
    if spec is pending.gate and not (wake is not None and clock.time_s < wake < pending.key(spec)):
        return False
    clock.jump_to(spec.arrival_step or 0, spec.arrival_s or 0.0, force, wake)
    return True


def admit_due(engine: Engine, arrivals: list[str], rejected: list[tuple[str, str]]) -> None:
    """Admit the requests due now to the scheduler, or refuse them (both listed)."""
    clock, config, scheduler = engine.clock, engine.config, engine.scheduler
    at = now(engine)
    pending = engine.arrivals.pending
    if not pending or engine.arrivals.key(pending[0]) > at:  # most steps: nobody is due
        return
    for spec in engine.arrivals.take_due(at):
        arrivals.append(spec.id)
        reason = admission.rejection(spec, config, engine.kv, spec.id in scheduler.requests)
        if reason:
            rejected.append((spec.id, reason))
            engine.rejected.append((spec.id, reason))
            continue
        arrival_time = clock.time_s if clock.step_clock else (spec.arrival_s or 0.0)
        scheduler.add_request(Request(spec, engine.num_arrived, arrival_time, clock.step_end_s))
        engine.num_arrived += 1


def reject_stuck(engine: Engine, rejected: list[tuple[str, str]]) -> None:
    """Waiting requests that no future step can admit: refuse them instead of looping."""
    scheduler = engine.scheduler
    for request in list(scheduler.waiting):
        reason = "can never be scheduled under this policy and cache size"
        scheduler.waiting.remove(request)
        del scheduler.requests[request.id]
        request.status = RequestStatus.REJECTED
        rejected.append((request.id, reason))
        engine.rejected.append((request.id, reason))
