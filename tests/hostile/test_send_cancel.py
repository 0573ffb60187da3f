"""Issue 33 (5): a viewer's send that ends in the same turn of the loop as its task is cancelled
(a shutdown) still ends the task: the cancel is not swallowed, as asyncio.wait_for swallows it on
Python 3.11."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from servescope.api.web.outflow import Outflow, Outlet

pytestmark = pytest.mark.hostile


class HeldSocket:
    """A socket whose send ends when the test says so."""

    def __init__(self, sent: asyncio.Future[None]) -> None:
        self.scope: dict[str, Any] = {}
        self.sent = sent

    async def send_text(self, text: str) -> None:
        await self.sent


def test_a_cancel_that_meets_a_finished_send_ends_the_sender() -> None:
    async def main() -> str:
        sent = asyncio.get_running_loop().create_future()
        outlet = Outlet(Outflow(send_timeout_s=10.0, max_buffered_bytes=1 << 20),
                        HeldSocket(sent))  # type: ignore[arg-type]

        async def sender() -> str:
            await outlet.send("frame")
            return "went on after the cancel"

        task = asyncio.create_task(sender())
        while not _waiting(task):
            await asyncio.sleep(0)
        sent.set_result(None)
        task.cancel()  # in the same turn as the send ends
        try:
            return await task
        except asyncio.CancelledError:
            return "cancelled"

    assert asyncio.run(main()) == "cancelled"


def _waiting(task: asyncio.Task[str]) -> bool:
    """Whether the task is parked in an await (its coroutine has started and is suspended)."""
    return task.get_coro().cr_await is not None  # type: ignore[union-attr]
