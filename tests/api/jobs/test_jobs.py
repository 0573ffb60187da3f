"""Heavy REST work runs on worker threads, bounded: a job over the limit waits in a short line
for a slot, one past the line is refused at once (503), a slow one answers 503 at its time
budget, the event loop answers meanwhile, and a cancel is never lost."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

from servescope.api.errors import JobError
from servescope.api.jobs.pool import Jobs


def test_jobs_over_the_limit_are_refused_and_a_slow_one_times_out_while_the_loop_runs():
    release = threading.Event()

    async def main():
        jobs = Jobs(max_jobs=1, timeout_s=0.2, max_waiting=0)
        slow = asyncio.create_task(jobs.run("export", release.wait, 30))
        await asyncio.sleep(0)  # the slow job holds the one slot
        with pytest.raises(JobError, match="already running 1 heavy jobs"):
            await jobs.run("diagnosis", lambda: 1)
        ticks = 0
        while not slow.done():  # the loop keeps turning while the job blocks its thread
            ticks += 1
            await asyncio.sleep(0.01)
        with pytest.raises(JobError, match=r"the export took longer than 0.2 s \(job_timeout_s\)"):
            slow.result()
        assert ticks > 1 and jobs.running == 1  # its thread still runs: the slot stays taken
        release.set()
        while jobs.running:
            await asyncio.sleep(0.01)
        assert await jobs.run("summary", lambda x: x + 1, 41) == 42

    asyncio.run(main())


def test_a_job_over_the_limit_waits_for_a_slot_and_runs_when_it_frees():
    release = threading.Event()
    order: list[str] = []

    async def main():
        jobs = Jobs(max_jobs=1, timeout_s=60, max_waiting=1)
        first = asyncio.create_task(jobs.run("export", lambda: release.wait(30) and
                                             order.append("export")))
        await asyncio.sleep(0)
        second = asyncio.create_task(jobs.run("diagnosis", lambda: order.append("diagnosis")))
        while jobs.waiting == 0:
            await asyncio.sleep(0.01)
        with pytest.raises(JobError, match="already running 1 heavy jobs"):  # the line is full
            await jobs.run("summary", lambda: None)
        assert order == [] and not second.done()
        release.set()
        await asyncio.gather(first, second)
        assert order == ["export", "diagnosis"] and jobs.running == 0 and jobs.waiting == 0

    asyncio.run(main())


def test_a_wait_for_a_slot_counts_against_the_time_budget():
    release = threading.Event()

    async def main():
        jobs = Jobs(max_jobs=1, timeout_s=0.2, max_waiting=1)
        slow = asyncio.create_task(jobs.run("export", release.wait, 30))
        await asyncio.sleep(0)
        with pytest.raises(JobError, match=r"stayed busy with 1 heavy jobs \(1 export\) for 0.2 s"):
            await jobs.run("diagnosis", lambda: 1)
        assert jobs.waiting == 0
        release.set()
        with pytest.raises(JobError):
            await slow

    asyncio.run(main())


class InlineExecutor(ThreadPoolExecutor):
    """Runs each job as it is submitted: its asyncio future then completes at the loop's next
    turn, so that a cancel can be sent at every turn around it, deterministically."""

    def submit(self, fn, /, *args, **kwargs):
        future: Future = Future()
        future.set_result(fn(*args, **kwargs))
        return future


@pytest.mark.parametrize("turns", range(8))
def test_a_cancel_that_comes_as_a_job_or_a_slot_does_is_never_lost(turns):
    # Python 3.11's asyncio.wait_for returns the awaited result when the cancel and the result
    # come at the same turn of the loop: the cancelled request would run on (and a shutdown
    # would wait for it)
    async def main():
        asyncio.get_running_loop().set_default_executor(InlineExecutor())
        jobs = Jobs(max_jobs=1, timeout_s=60, max_waiting=1)
        first = asyncio.create_task(jobs.run("export", lambda: 1))
        second = asyncio.create_task(jobs.run("diagnosis", lambda: 2))  # waits for the slot
        for _ in range(turns):
            await asyncio.sleep(0)
        cancels = [task.cancel() for task in (first, second)]
        for task, cancelled in zip((first, second), cancels, strict=True):
            if cancelled:  # the cancel reached a task not yet done: it ends cancelled
                with pytest.raises(asyncio.CancelledError):
                    await task
            else:
                assert await task in (1, 2)
        while jobs.running:  # a cancelled job's thread runs out, then frees its slot
            await asyncio.sleep(0)
        assert jobs.waiting == 0

    asyncio.run(main())
