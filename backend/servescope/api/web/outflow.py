"""Memory held for viewers that stop reading: a viewer's sender waits for its socket to drain
before the next frame (so it holds at most one frame in flight), a send that waits past
`send_timeout_s` drops the viewer, and when the bytes buffered for all viewers would pass
`max_buffered_bytes` the viewers holding the most are dropped first. Dropping aborts the
connection, which frees its buffer at once (a close handshake would wait for it to drain)."""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket

TRANSPORT = "servescope.transport"


class CaptureTransport:
    """ASGI middleware: puts a WebSocket's asyncio transport in its scope, where the server
    gives one (uvicorn's protocol object is the `send` it passes; TestClient has none)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            scope[TRANSPORT] = getattr(getattr(send, "__self__", None), "transport", None)
        await self.app(scope, receive, send)


class Stalled(Exception):
    """The viewer was dropped: it stopped reading."""


class Outflow:
    """The server's viewer sockets and what they hold buffered."""

    def __init__(self, send_timeout_s: float, max_buffered_bytes: int) -> None:
        self.send_timeout_s = send_timeout_s
        self.max_buffered_bytes = max_buffered_bytes
        self.outlets: set[Outlet] = set()
        self.num_dropped = 0

    def buffered(self) -> int:
        return sum(o.buffered() for o in self.outlets)

    def make_room(self, outlet: Outlet, size: int) -> None:
        """Drop the viewers holding the most until `size` more bytes fit under the cap (this
        one last: a healthy viewer has nothing buffered)."""
        total = self.buffered()
        for other in sorted(self.outlets, key=lambda o: (o is outlet, -o.buffered())):
            if total + size <= self.max_buffered_bytes or other.buffered() == 0:
                return
            total -= other.buffered()
            other.drop()


class Outlet:
    """One viewer's socket: `send` is what the viewer's sender calls."""

    def __init__(self, outflow: Outflow, socket: WebSocket) -> None:
        self.outflow = outflow
        self.socket = socket
        self.transport: Any = socket.scope.get(TRANSPORT)
        self.dropped = False
        outflow.outlets.add(self)

    def buffered(self) -> int:
        if self.transport is None or self.transport.is_closing():
            return 0
        return int(self.transport.get_write_buffer_size())

    async def send(self, text: str) -> None:
        if self.dropped:
            raise Stalled
        self.outflow.make_room(self, len(text))
        if self.dropped:
            raise Stalled
        # asyncio.timeout, not wait_for: on Python 3.11 wait_for returns the send's result when
        # the send ends as the task is cancelled, and the cancel (a shutdown's) is lost
        try:
            async with asyncio.timeout(self.outflow.send_timeout_s):
                await self.socket.send_text(text)
        except TimeoutError:
            self.drop()
        if self.dropped:
            raise Stalled

    def drop(self) -> None:
        if self.dropped:
            return
        self.dropped = True
        self.outflow.num_dropped += 1
        if self.transport is not None:
            self.transport.abort()  # the receive loop then sees the disconnect

    def close(self) -> None:
        self.outflow.outlets.discard(self)
