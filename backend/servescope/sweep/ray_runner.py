"""Points as Ray tasks: Ray in-process on this machine (the default) or on a cluster by
address; the trace put in the object store once; a failed point retried, then reported as
failed; cancelling (Ctrl-C or an event) cancels the tasks still running."""

from __future__ import annotations

import functools
import os
import socket
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from servescope.core.config import ConfigError
from servescope.core.request import RequestSpec
from servescope.scenarios.diagnosis_check import prepare
from servescope.sweep.grid import Point
from servescope.sweep.point import run_point

CONNECT_TIMEOUT_S = 5.0
ATTEMPTS = 3  # a point's tries before it is reported as failed


class SweepError(Exception):
    """A sweep that cannot start (an unreachable cluster) or was cancelled."""


class Cancelled(SweepError):
    pass


def connect(address: str | None = None, num_cpus: int | None = None,
            object_store_memory: int | None = None) -> bool:
    """Join the cluster at `address`, or start Ray in this process with `num_cpus` (default:
    this machine's CPUs). True when this call started Ray (the caller shuts it down)."""
    import ray

    if ray.is_initialized():
        return False
    if address:
        _check_reachable(address)
        try:
            ray.init(address=address, log_to_driver=False, logging_level="ERROR")
        except (ConnectionError, RuntimeError, TimeoutError) as err:
            raise SweepError(f"cannot join the Ray cluster at {address}: {err}") from err
        return True
    # address="local": a Ray of our own even when another cluster runs on this machine
    # (ray.init() without an address would join that one)
    ray.init(address="local", num_cpus=num_cpus or os.cpu_count() or 1, include_dashboard=False,
             log_to_driver=False, logging_level="ERROR",
             object_store_memory=object_store_memory)
    return True


def _check_reachable(address: str) -> None:
    """A TCP connect to the head's GCS port, so a wrong address fails in seconds (ray.init
    itself retries for a minute or more)."""
    if address == "auto":
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise SweepError(f"--ray-address {address!r}: expected HOST:PORT (or ray://HOST:PORT)")
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as err:
        raise SweepError(f"cannot reach the Ray cluster at {address}: "
                         f"{err.strerror or err}") from None


def nodes() -> list[dict[str, Any]]:
    import ray

    return [{"node": n["NodeID"], "address": n["NodeManagerAddress"],
             "cpus": n["Resources"].get("CPU", 0)} for n in ray.nodes() if n["Alive"]]


def unfit_reason(point: Point) -> str | None:
    """Why the point's config does not fit its GPU memory (None: it fits)."""
    try:
        prepare(point.config)
    except ConfigError as err:
        return str(err)
    return None


def _task(point: Point, specs: Sequence[RequestSpec], slos: Mapping[str, float],
          prices: Mapping[str, float]) -> dict[str, Any]:
    import ray

    report = run_point(point, specs, slos, prices)
    report["node"] = ray.get_runtime_context().get_node_id()
    return report


@functools.cache
def _remote(task: Callable[..., dict[str, Any]]) -> Any:
    """The task as a Ray remote function, registered once per process (not once per sweep)."""
    import ray

    # SPREAD: points go to every node of a cluster, not packed onto the head first
    return ray.remote(num_cpus=1, max_retries=0, scheduling_strategy="SPREAD")(task)


def run(points: Sequence[Point], specs: Sequence[RequestSpec], slos: Mapping[str, float],
        prices: Mapping[str, float], max_parallel: int | None = None,
        on_report: Callable[[dict[str, Any]], None] | None = None,
        cancel: threading.Event | None = None,
        task: Callable[..., dict[str, Any]] = _task) -> list[dict[str, Any]]:
    """Every point's report, in grid order; Ray must be connected. `task(point, specs, slos,
    prices)` runs one point in a Ray worker."""
    import ray

    remote = _remote(task)
    specs_ref = ray.put(list(specs))
    reports: dict[int, dict[str, Any]] = {}
    errors: dict[int, list[str]] = {}
    queue = [p for p in points if not _unfit(p, reports, on_report)]
    limit = max_parallel or max(1, int(ray.cluster_resources().get("CPU", 1)))
    in_flight: dict[Any, tuple[Point, int]] = {}
    try:
        while queue or in_flight:
            # checked before submitting: force-cancelling a task submitted a moment before
            # once crashed Ray 2.60's driver ("Tried to complete task that was not pending")
            if cancel is not None and cancel.is_set():
                raise Cancelled("the sweep was cancelled")
            while queue and len(in_flight) < limit:
                point = queue.pop(0)
                attempt = len(errors.get(point.index, [])) + 1
                in_flight[remote.remote(point, specs_ref, slos, prices)] = (point, attempt)
            ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=0.25)
            for ref in ready:
                point, attempt = in_flight.pop(ref)
                _collect(ref, point, attempt, queue, errors, reports, on_report)
    finally:
        for ref in in_flight:
            ray.cancel(ref, force=True)
    return [reports[i] for i in sorted(reports)]


def _unfit(point: Point, reports: dict[int, dict[str, Any]],
           on_report: Callable[[dict[str, Any]], None] | None) -> bool:
    """Report a point that does not fit its GPU memory (not run); True if it does not."""
    reason = unfit_reason(point)
    if reason is not None:
        _done(reports, on_report, {"index": point.index, "point": dict(point.values),
                                   "replicas": point.replicas, "status": "does_not_fit",
                                   "reason": reason, "config": point.config.to_dict()})
    return reason is not None


def _collect(ref: Any, point: Point, attempt: int, queue: list[Point],
             errors: dict[int, list[str]], reports: dict[int, dict[str, Any]],
             on_report: Callable[[dict[str, Any]], None] | None) -> None:
    """A finished task's report, or its error: tried again up to ATTEMPTS, then a failed
    report carrying every attempt's error."""
    import ray

    try:
        report = ray.get(ref)
    except ray.exceptions.RayError as err:
        errors.setdefault(point.index, []).append(_cause(err))
        if attempt < ATTEMPTS:
            queue.insert(0, point)
            return
        report = {"index": point.index, "point": dict(point.values), "replicas": point.replicas,
                  "status": "failed", "config": point.config.to_dict(),
                  "reason": errors[point.index][-1]}
    report["attempts"] = attempt
    report["errors"] = errors.get(point.index, [])
    _done(reports, on_report, report)


def _cause(err: Exception) -> str:
    cause = getattr(err, "cause", None)
    return f"{type(cause).__name__}: {cause}" if cause is not None else str(err).splitlines()[0]


def _done(reports: dict[int, dict[str, Any]],
          on_report: Callable[[dict[str, Any]], None] | None, report: dict[str, Any]) -> None:
    reports[report["index"]] = report
    if on_report is not None:
        on_report(report)
