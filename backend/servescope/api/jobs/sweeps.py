"""The server's sweeps: they run one at a time, through sweep.plan, in the process that
drives Ray for the server (api/jobs/sweep_driver.py), followed from one worker thread (off the
event loop); progress and results stay in memory until the server stops. Each is stopped at
its deadline or when the server goes over its memory cap (Ray's processes counted), and only
whoever holds its token may read or cancel it. Ray stays up between sweeps started close
together, and is released (its driver process stopped, Ray shut down with it) once no sweep has
run for `idle_s`: an in-process Ray holds about 1.5 GB."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from servescope.api.errors import DriverDied, SweepBusy
from servescope.api.jobs.sweep_driver import Driver
from servescope.core.request import RequestSpec
from servescope.sweep import plan as sweep_plan

# a stopping server gives Ray this long to shut down before its driver is killed (Ray's own
# processes share the driver's fate): SIGTERM must end the server within 10 s (issue 33), and
# uvicorn's grace for open requests takes 3 of them (cli/serve.py)
SHUTDOWN_GRACE_S = 4.0
MAX_KEPT = 16  # finished sweeps kept; the oldest is forgotten first
WATCH_S = 1.0  # how often a running sweep's deadline and the memory cap are checked



@dataclass
class Sweep:
    sweep_id: str
    plan: sweep_plan.Plan
    workload: dict[str, Any]
    status: str = "running"  # running | done | failed | cancelled
    reports: list[dict[str, Any]] = field(default_factory=list)
    result: dict[str, Any] | None = None
    error: str | None = None
    cancel: threading.Event = field(default_factory=threading.Event)
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    payer: str = ""  # who started it, charged for it (api/web/clients.py's payer_of)
    started_s: float = field(default_factory=time.monotonic)
    stopped: str | None = None  # why the server cancelled it (deadline, memory)

    def holds_token(self, token: str | None) -> bool:
        return bool(token) and secrets.compare_digest(self.token.encode(),
                                                      (token or "").encode())

    def view(self) -> dict[str, Any]:
        """The sweep as GET /api/sweeps/{id} reports it (the result's points, once done)."""
        out = {"sweep_id": self.sweep_id, "status": self.status, "workload": self.workload,
               "base_config": dict(self.plan.base), "total": len(self.plan.points),
               "done": len(self.reports), "error": self.error, "grid": self.plan.grid,
               "slos": self.plan.slos}
        if self.result is not None:
            return {**out, **self.result}
        return {**out, "points": sorted(self.reports, key=lambda r: r["index"])}


class Sweeps:
    def __init__(self, ray_address: str | None = None, num_cpus: int | None = None,
                 idle_s: float = 300.0, deadline_s: float = float("inf"),
                 over_cap: Callable[[], bool] = lambda: False) -> None:
        self.deadline_s = deadline_s
        self.over_cap = over_cap  # whether the server holds more than its memory cap
        self.sweeps: dict[str, Sweep] = {}
        self.driver = Driver(ray_address or None, num_cpus or None)  # Ray stays up between
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sweep")
        self.lock = threading.Lock()
        self.idle_s = idle_s
        self.num_started = 0  # a release planned before the latest start is void
        self.release: threading.Timer | None = None

    def start(self, plan: sweep_plan.Plan, specs: list[RequestSpec],
              workload: dict[str, Any], max_parallel: int | None, payer: str = "") -> Sweep:
        with self.lock:
            running = [j for j in self.sweeps.values() if j.status == "running"]
            if running:
                left = self.deadline_s - (time.monotonic() - running[0].started_s)
                raise SweepBusy("a sweep is already running on this server; its owner may "
                                "cancel it, and the server stops it at its deadline "
                                "(sweep_deadline_s)", max(1.0, min(left, 86400.0)))
            sweep = Sweep(secrets.token_hex(8), plan, workload, payer=payer)
            self.sweeps[sweep.sweep_id] = sweep
            self.num_started += 1
            if self.release is not None:
                self.release.cancel()
            while len(self.sweeps) > MAX_KEPT:
                self.sweeps.pop(next(iter(self.sweeps)))
        self.worker.submit(self._run, sweep, specs, max_parallel)
        threading.Thread(target=self._watch, args=(sweep,), daemon=True,
                         name=f"sweep-watch-{sweep.sweep_id}").start()
        return sweep

    def _watch(self, sweep: Sweep) -> None:
        """Cancel the sweep at its deadline or when the server is over its memory cap."""
        while sweep.status == "running" and not sweep.cancel.wait(WATCH_S):
            if time.monotonic() - sweep.started_s > self.deadline_s:
                sweep.stopped = f"stopped at its deadline ({self.deadline_s:g} s, " \
                                "sweep_deadline_s)"
            elif self.over_cap():
                sweep.stopped = "stopped: the server went over its memory_cap_mb"
            else:
                continue
            sweep.cancel.set()

    def memory(self) -> int:
        """Resident bytes of the sweep driver and its Ray processes."""
        return self.driver.memory()

    def _run(self, sweep: Sweep, specs: list[RequestSpec], max_parallel: int | None) -> None:
        try:
            status, payload = self.driver.run(sweep.sweep_id, sweep.plan, specs, max_parallel,
                                              sweep.cancel, sweep.reports.append)
            sweep.result = payload if status == "done" else None
            sweep.error = payload if status == "failed" else None
            sweep.status = status
        except DriverDied as err:
            sweep.error, sweep.status = str(err), "cancelled" if sweep.cancel.is_set() else "failed"
        except Exception as err:  # noqa: BLE001 - the sweep reports what ended it
            sweep.error, sweep.status = f"{type(err).__name__}: {err}", "failed"
        if sweep.stopped is not None and sweep.status == "cancelled":
            sweep.error = sweep.stopped
        self._release_when_idle()

    def _release_when_idle(self) -> None:
        """In `idle_s`, stop Ray unless a sweep started meanwhile (the stop runs on the worker
        thread, so it never overlaps a sweep)."""
        with self.lock:
            started = self.num_started
            self.release = threading.Timer(self.idle_s, self._submit_release, (started,))
            self.release.daemon = True
            self.release.start()

    def _submit_release(self, started: int) -> None:
        try:
            self.worker.submit(self._release_if_idle, started)
        except RuntimeError:  # the server is closing: close() stops the driver itself
            pass

    def _release_if_idle(self, started: int) -> None:
        with self.lock:
            if started != self.num_started:
                return
        self.driver.close()

    @property
    def ray_resident(self) -> bool:
        """Whether a driver process (and the Ray it started) is up."""
        return self.driver.alive

    def get(self, sweep_id: str) -> Sweep | None:
        return self.sweeps.get(sweep_id)

    def close(self) -> None:
        with self.lock:
            if self.release is not None:
                self.release.cancel()
        for sweep in self.sweeps.values():
            sweep.cancel.set()
        self.worker.submit(self.driver.close, SHUTDOWN_GRACE_S)
        self.worker.shutdown(wait=True)


def base_config(workload_config: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """The workload's own settings with the request's over them, as `servescope sweep` takes
    a config file's (each point resolves them with its grid values); KV blocks are left to
    the cost model (each point derives its own from its GPU and memory settings)."""
    merged = {**workload_config, **overrides}
    if "num_gpu_blocks" not in overrides:
        merged.pop("num_gpu_blocks", None)
    return merged
