"""A viewer's sender cancelled as its socket closes is cancelled, even when the cancel lands
as a send completes (Python 3.11's wait_for swallowed it there: the sender then waited forever
for a session that no longer woke it, and uvicorn's shutdown waited for the sender; found by
bench/classroom.py, whose servers did not stop on SIGTERM)."""

from __future__ import annotations

import asyncio

from servescope.api.web.outflow import Outflow, Outlet


class Socket:
    scope: dict = {}

    async def send_text(self, text: str) -> None:
        return None


def test_a_send_cancelled_at_any_point_is_cancelled():
    async def main() -> list[int]:
        outlet = Outlet(Outflow(10.0, 1 << 20), Socket())  # type: ignore[arg-type]
        swallowed = []
        for spins in range(4):  # cancel after 0, 1, 2, 3 turns of the loop
            task = asyncio.create_task(outlet.send("frame"))
            for _ in range(spins):
                await asyncio.sleep(0)
            if not task.cancel():
                continue  # it had ended: nothing to cancel
            try:
                await task
            except asyncio.CancelledError:
                continue
            swallowed.append(spins)
        return swallowed

    assert asyncio.run(main()) == []
