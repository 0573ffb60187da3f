"""Sweeps from the page: start one over a preset or an uploaded trace (in the background),
read its progress and results, cancel it."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException
from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import HTTPConnection

from servescope.api.deps import StoreDep, UploadOwnerDep
from servescope.api.errors import SweepBusy
from servescope.api.jobs.sweeps import Sweeps, base_config
from servescope.api.routes._lookup import found
from servescope.api.uploads.trace_workload import stored_trace
from servescope.core.config import ConfigError
from servescope.scenarios.workloads import Workload, WorkloadError, preset_workload
from servescope.sweep import plan as sweep_plan
from servescope.sweep.cost import PriceError
from servescope.sweep.grid import GridError
from servescope.sweep.slo import SloError, parse_slos

router = APIRouter(prefix="/api", tags=["sweeps"])


class SweepWorkload(BaseModel):
    model_config = ConfigDict(extra="forbid")
    preset: str | None = Field(None, max_length=64)
    trace: str | None = Field(None, max_length=64, description="an uploaded trace's id")


class SweepRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    workload: SweepWorkload
    config: dict[str, Any] = Field(default_factory=dict, description="the base engine config "
                                   "over the workload's own; it must name a model")
    grid: dict[str, Any] = Field(description="grid key -> list of values (docs/sweep.md)")
    slos: dict[str, float] = Field(default_factory=dict, description="metric -> ms")
    gpu_prices: dict[str, float] = Field(default_factory=dict, description="GPU -> $ per "
                                         "GPU-hour, over the price table")
    max_parallel: int | None = Field(None, ge=1, le=1024)


def get_sweeps(conn: HTTPConnection) -> Sweeps:
    sweeps: Sweeps = conn.app.state.sweeps
    return sweeps


SweepsDep = Annotated[Sweeps, Depends(get_sweeps)]


@router.post("/sweeps", status_code=202,
             responses={400: {"description": "a bad grid, SLO, price, config or workload: "
                                             "message and field"},
                        409: {"description": "a sweep is already running"}})
def start_sweep(body: SweepRequest, store: StoreDep, sweeps: SweepsDep,
                owner: UploadOwnerDep) -> dict[str, Any]:
    """Check everything, then run the sweep in the background; poll GET for progress."""
    workload = _workload(body.workload, store, owner)
    try:
        base = base_config(workload.base_config, body.config)
        slos = parse_slos(f"{k}={v}" for k, v in body.slos.items())
        plan = sweep_plan.make_plan(base, body.grid, slos,
                                    [f"{k}={v}" for k, v in body.gpu_prices.items()])
    except (ConfigError, GridError, SloError, PriceError) as err:
        raise HTTPException(400, {"message": str(err), "field": err.field}) from err
    try:
        sweep = sweeps.start(plan, workload.specs, body.workload.model_dump(exclude_none=True),
                             body.max_parallel)
    except SweepBusy as err:
        raise HTTPException(409, {"message": str(err), "field": "sweep"}) from err
    return sweep.view()


@router.get("/sweeps/{sweep_id}")
def get_sweep(sweep_id: str, sweeps: SweepsDep) -> dict[str, Any]:
    """status (running | done | failed | cancelled), done of total, the points so far; once
    done, the whole result (pareto, answer, ray)."""
    return found(sweeps.get(sweep_id), _not_found()).view()


@router.delete("/sweeps/{sweep_id}")
def cancel_sweep(sweep_id: str, sweeps: SweepsDep) -> dict[str, Any]:
    sweep = found(sweeps.get(sweep_id), _not_found())
    sweep.cancel.set()
    return {"sweep_id": sweep_id, "cancelling": sweep.status == "running"}


def _not_found() -> dict[str, str]:
    return {"message": "no such sweep", "field": "sweep_id", "code": "not_found"}


def _workload(choice: SweepWorkload, store: Any, owner: str) -> Workload:
    """The preset, or the uploaded trace of `owner`'s (the `X-Upload-Token` client's)."""
    try:
        if choice.trace and not choice.preset:
            workload = stored_trace(store, choice.trace, owner)
        elif choice.preset and not choice.trace:
            workload = preset_workload(choice.preset)
        else:
            raise WorkloadError("name a preset or an uploaded trace, not both", "workload")
    except WorkloadError as err:
        raise HTTPException(400, {"message": str(err), "field": err.field or "workload"}) from err
    if workload.records is not None or not workload.specs:
        raise HTTPException(400, {"message": "a sweep needs requests to simulate; this trace "
                                             "is a recorded run", "field": "trace"})
    return workload
