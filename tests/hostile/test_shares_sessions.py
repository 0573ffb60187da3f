"""Fair shares of sessions and sockets (issue 33, part 3): one client (here, one address) holds
at most its share of sessions, a socket that never configures its session gives it back within
`unconfigured_timeout_s`, and a quiet driver is closed after `session_idle_s`. A second client
is a second loopback address."""

from __future__ import annotations

import asyncio
import time

from support.hostile_shares import CONFIGURE, first_message, open_socket
from websockets.exceptions import ConnectionClosed

OTHER = "127.0.0.2"  # another client on the loopback range


def test_one_address_holds_at_most_its_share_of_sessions(serve):
    server = serve(client_max_sessions=3, max_sessions=8)

    async def main():
        held = [await open_socket(server, "/ws/sessions/new") for _ in range(3)]
        t0 = time.monotonic()
        extra = await open_socket(server, "/ws/sessions/new")
        refused = await first_message(extra)
        assert refused["type"] == "error" and refused["code"] == "limit", refused
        assert "client_max_sessions" in refused["message"]
        assert time.monotonic() - t0 < 5
        other = await open_socket(server, "/ws/sessions/new", OTHER)
        await other.send(CONFIGURE)
        assert (await first_message(other))["type"] == "init"  # another client is not held
        for ws in (*held, extra, other):
            await ws.close()

    asyncio.run(main())


def test_held_never_configured_sockets_let_a_new_visitor_in_within_30_s(serve):
    """The issue's finding: one client holding 64 never-configured sockets locked every visitor
    out for as long as it liked. With the default unconfigured_timeout_s they are closed (4408)
    and the visitor, retrying as a page does, is in within 30 s."""
    server = serve(client_max_sessions=64, max_sessions=64)

    async def main():
        held = [await open_socket(server, "/ws/sessions/new") for _ in range(64)]
        t0 = time.monotonic()
        while True:
            assert time.monotonic() - t0 < 30, "the new visitor was kept out for 30 s"
            if await visit(server):
                break
            await asyncio.sleep(0.5)
        codes = []
        for ws in held:
            try:
                await asyncio.wait_for(ws.recv(), 30)
            except ConnectionClosed as closed:
                codes.append(closed.rcvd.code if closed.rcvd else None)
        assert codes == [4408] * 64

    asyncio.run(main())


async def visit(server) -> bool:
    """Whether a page from another address got a session (False: refused, `limit`)."""
    visitor = await open_socket(server, "/ws/sessions/new", OTHER)
    try:
        refused = await first_message(visitor, timeout=1.0)  # a refusal comes at once
        assert refused["code"] == "limit", refused
        return False
    except TimeoutError:
        await visitor.send(CONFIGURE)
        return (await first_message(visitor))["type"] == "init"
    except ConnectionClosed:
        return False
    finally:
        await visitor.close()


def test_a_quiet_driver_is_closed_after_session_idle_s(serve):
    server = serve(session_idle_s=2)

    async def main():
        ws = await open_socket(server, "/ws/sessions/new")
        await ws.send(CONFIGURE)
        assert (await first_message(ws))["type"] == "init"
        t0 = time.monotonic()
        try:
            async with asyncio.timeout(30):
                while True:
                    await ws.recv()
        except ConnectionClosed as closed:
            assert closed.rcvd is not None and closed.rcvd.code == 4408
            assert closed.rcvd.reason == "idle"
        assert 1.5 < time.monotonic() - t0 < 30

    asyncio.run(main())
