"""Issue 33 (5): every wait on a run ends. A summary waiting for a session's simulation is
answered with an error when the session is closed (reaped) or reconfigured under it, and
within job_timeout_s otherwise; outflow's send deadline lets a cancel through."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from support.server import make_settings

from servescope.api.errors import JobError, SessionError
from servescope.api.reports import runs
from servescope.api.sessions.registry import Registry
from servescope.api.uploads.store import Store
from servescope.api.wire import protocol as P

pytestmark = pytest.mark.hostile

LONG = P.WorkloadSpec(synthetic={"num_requests": 20_000, "request_rate": 50})
SHORT = P.WorkloadSpec(synthetic={"num_requests": 4, "request_rate": 50})


async def waiting_summary(registry: Registry, **settings: float):
    """A session simulating a long run ahead, and a summary task waiting on it."""
    session = await registry.create_configured(P.Configure(type="configure", workload=LONG))
    task = asyncio.create_task(runs.summaries(session))
    while not task.done() and session.tracks[0].head < 0:  # until the run has begun
        await asyncio.sleep(0.01)
    assert not task.done() and not session.tracks[0].done
    return session, task


def run_with_registry(tmp_path: Path, body, **overrides) -> None:
    async def main() -> None:
        store = Store(tmp_path / "data")
        registry = Registry(make_settings(tmp_path, **overrides), store)
        try:
            await body(registry)
        finally:
            registry.close()
            store.close()
    asyncio.run(main())


def test_a_summary_waiting_on_a_closed_session_is_told_so(tmp_path: Path) -> None:
    async def body(registry: Registry) -> None:
        session, task = await waiting_summary(registry)
        registry.sessions.pop(session.id).close()  # what reaping does
        with pytest.raises(SessionError) as err:
            await asyncio.wait_for(task, 60)  # a bound only against hanging when broken
        assert err.value.code == "conflict"
    run_with_registry(tmp_path, body)


def test_a_summary_waiting_on_a_reconfigured_session_is_told_so(tmp_path: Path) -> None:
    async def body(registry: Registry) -> None:
        session, task = await waiting_summary(registry)
        await session.configure(P.Configure(type="configure", workload=SHORT))
        with pytest.raises(SessionError) as err:
            await asyncio.wait_for(task, 60)
        assert err.value.code == "conflict"
    run_with_registry(tmp_path, body)


def test_a_summary_waits_no_longer_than_job_timeout_s(tmp_path: Path) -> None:
    async def body(registry: Registry) -> None:
        _, task = await waiting_summary(registry)
        with pytest.raises(JobError) as err:
            await asyncio.wait_for(task, 60)
        assert err.value.code == "busy" and "job_timeout_s" in str(err.value)
    run_with_registry(tmp_path, body, job_timeout_s=0.5)
