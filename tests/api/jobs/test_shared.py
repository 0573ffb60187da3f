"""Shared answers (api/jobs/shared.py): requests asking the same of the same run version share
one computation, kept or in flight; a newer version computes anew; a failure is not kept; a
requester that leaves does not cancel what the others wait for."""

from __future__ import annotations

import asyncio
import threading

import pytest

from servescope.api.errors import JobError
from servescope.api.jobs.pool import Jobs
from servescope.api.jobs.shared import SharedAnswers


def test_the_same_question_of_the_same_run_is_computed_once():
    calls: list[int] = []

    async def main():
        shared = SharedAnswers()
        gate = asyncio.Event()

        async def compute():
            calls.append(1)
            await gate.wait()
            return {"n": len(calls)}

        waiting = [asyncio.create_task(shared.get(("overview", "run-a", 600), (10, False),
                                                  compute)) for _ in range(60)]
        await asyncio.sleep(0)
        gate.set()
        answers = await asyncio.gather(*waiting)
        assert answers == [{"n": 1}] * 60 and calls == [1]
        assert await shared.get(("overview", "run-a", 600), (10, False), compute) == {"n": 1}
        assert await shared.get(("overview", "run-a", 600), (20, True), compute) == {"n": 2}
        assert await shared.get(("overview", "run-a", 300), (20, True), compute) == {"n": 3}
        assert shared.num_computed == 3

    asyncio.run(main())


def test_a_failure_is_not_kept_and_a_leaver_does_not_cancel_the_others():
    async def main():
        shared = SharedAnswers(max_entries=2)
        gate = asyncio.Event()
        tries: list[int] = []

        async def flaky():
            tries.append(1)
            await gate.wait()
            if len(tries) == 1:
                raise JobError("busy")
            return "ok"

        leaver = asyncio.create_task(shared.get("k", 1, flaky))
        stayer = asyncio.create_task(shared.get("k", 1, flaky))
        await asyncio.sleep(0)
        leaver.cancel()
        gate.set()
        with pytest.raises(JobError):
            await stayer  # the computation ran on for the one who stayed
        assert await shared.get("k", 1, flaky) == "ok" and len(tries) == 2
        for k in ("a", "b", "c"):  # the newest max_entries are kept
            await shared.get(k, 1, flaky)
        assert await shared.get("k", 1, flaky) == "ok" and len(tries) == 6

    asyncio.run(main())


def test_a_busy_refusal_names_the_jobs_that_hold_the_slots():
    release = threading.Event()

    async def main():
        jobs = Jobs(max_jobs=1, timeout_s=5, max_waiting=0)
        holder = asyncio.create_task(jobs.run("overview", release.wait, 5))
        await asyncio.sleep(0)
        with pytest.raises(JobError, match=r"already running 1 heavy jobs \(1 overview\)"):
            await jobs.run("csv export", lambda: None)
        release.set()
        await holder
        assert jobs.running_kinds() == ""

    asyncio.run(main())


def test_a_shared_job_waits_in_the_longer_line_where_another_is_refused():
    """A room's private sessions each ask for their own overview at once: distinct questions,
    each asked once, which wait in the shared line instead of a 503 past the short one."""
    release = threading.Event()

    async def main():
        jobs = Jobs(max_jobs=1, timeout_s=30, max_waiting=0, max_waiting_shared=4)
        holder = asyncio.create_task(jobs.run("export", release.wait, 30))
        await asyncio.sleep(0)
        with pytest.raises(JobError, match="already running 1 heavy jobs"):
            await jobs.call("csv export", max, 1, 2)
        waiting = asyncio.create_task(jobs.call("overview", max, 1, 2, shared=True))
        while jobs.waiting == 0:
            await asyncio.sleep(0.01)
        release.set()
        assert await waiting == 2
        await holder

    asyncio.run(main())
