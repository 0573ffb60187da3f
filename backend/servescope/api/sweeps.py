"""The server's sweep jobs: sweeps run one at a time on one worker thread (off the event loop;
Ray's driver calls hang when made from a thread other than the one that started it), through
sweep.plan; progress and results stay in memory until the server stops."""

from __future__ import annotations

import secrets
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from servescope.core.config import EngineConfig
from servescope.core.request import RequestSpec
from servescope.sweep import plan as sweep_plan
from servescope.sweep import ray_runner
from servescope.sweep.point import explicit
from servescope.sweep.ray_runner import Cancelled

MAX_JOBS = 16  # finished jobs kept; the oldest is forgotten first


class SweepBusy(Exception):
    pass


@dataclass
class SweepJob:
    sweep_id: str
    plan: sweep_plan.Plan
    workload: dict[str, Any]
    status: str = "running"  # running | done | failed | cancelled
    reports: list[dict[str, Any]] = field(default_factory=list)
    result: dict[str, Any] | None = None
    error: str | None = None
    cancel: threading.Event = field(default_factory=threading.Event)

    def view(self) -> dict[str, Any]:
        """The job as GET /api/sweeps/{id} reports it (the result's points, once done)."""
        out = {"sweep_id": self.sweep_id, "status": self.status, "workload": self.workload,
               "base_config": explicit(self.plan.base), "total": len(self.plan.points),
               "done": len(self.reports), "error": self.error, "grid": self.plan.grid,
               "slos": self.plan.slos}
        if self.result is not None:
            return {**out, **self.result}
        return {**out, "points": sorted(self.reports, key=lambda r: r["index"])}


class SweepJobs:
    def __init__(self, ray_address: str | None = None, num_cpus: int | None = None) -> None:
        self.ray_address, self.num_cpus = ray_address or None, num_cpus or None
        self.jobs: dict[str, SweepJob] = {}
        self.started_ray = False  # Ray stays up between sweeps; close() shuts it down
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sweep")
        self.lock = threading.Lock()

    def start(self, plan: sweep_plan.Plan, specs: list[RequestSpec],
              workload: dict[str, Any], max_parallel: int | None) -> SweepJob:
        with self.lock:
            if any(j.status == "running" for j in self.jobs.values()):
                raise SweepBusy("a sweep is already running on this server; cancel it "
                                "(DELETE /api/sweeps/{id}) or wait for it")
            job = SweepJob(secrets.token_hex(8), plan, workload)
            self.jobs[job.sweep_id] = job
            while len(self.jobs) > MAX_JOBS:
                self.jobs.pop(next(iter(self.jobs)))
        self.worker.submit(self._run, job, specs, max_parallel)
        return job

    def _run(self, job: SweepJob, specs: list[RequestSpec], max_parallel: int | None) -> None:
        try:
            self.started_ray |= ray_runner.connect(self.ray_address, self.num_cpus)
            job.result = sweep_plan.execute(job.plan, specs, self.ray_address, max_parallel,
                                            on_report=job.reports.append, cancel=job.cancel,
                                            num_cpus=self.num_cpus)
            job.status = "done"
        except Cancelled:
            job.status = "cancelled"
        except Exception as err:  # the job reports what ended it (an unreachable cluster)
            job.error, job.status = f"{type(err).__name__}: {err}", "failed"

    def get(self, sweep_id: str) -> SweepJob | None:
        return self.jobs.get(sweep_id)

    def close(self) -> None:
        for job in self.jobs.values():
            job.cancel.set()
        self.worker.submit(self._shutdown)
        self.worker.shutdown(wait=True)

    def _shutdown(self) -> None:
        if self.started_ray:
            import ray

            ray.shutdown()


def base_config(workload_config: dict[str, Any], overrides: dict[str, Any]) -> EngineConfig:
    """The workload's own config with the request's settings over it; KV blocks are left to
    the cost model (each point derives its own from its GPU and memory settings)."""
    merged = {**workload_config, **overrides}
    if "num_gpu_blocks" not in overrides:
        merged.pop("num_gpu_blocks", None)
    return EngineConfig.from_dict(merged)
