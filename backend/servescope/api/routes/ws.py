"""The session WebSocket: origin check, join (driver or follower), then one sender task and
the receive loop that applies client messages (docs/protocol.md)."""

from __future__ import annotations

import asyncio
import contextlib
import time

from fastapi import APIRouter, WebSocket

from servescope.api.deps import RegistryDep, SettingsDep
from servescope.api.errors import SessionError
from servescope.api.sessions import access
from servescope.api.sessions.registry import Registry
from servescope.api.sessions.session import Session
from servescope.api.sessions.viewer import Viewer
from servescope.api.settings import Settings
from servescope.api.web import control
from servescope.api.web.clients import Shares, payer_of
from servescope.api.web.origin import host_refusal, origin_allowed
from servescope.api.web.outflow import Outlet
from servescope.api.wire import protocol as P
from servescope.api.wire.text import dump

router = APIRouter()


def may_join(socket: WebSocket, settings: Settings, follow: bool) -> bool:
    """A driver's page must be one of ours (a browser always sends Origin); a follower without
    one (a script) only reads. Either must name a host this server serves."""
    if host_refusal(socket.headers.get("host"), settings) is not None:
        return False
    origin = socket.headers.get("origin")
    if origin is None:
        return follow
    return origin_allowed(origin, socket.headers.get("host"), settings)


@router.websocket("/ws/sessions/{session_id}")
async def session_socket(socket: WebSocket, session_id: str, registry: RegistryDep,
                         settings: SettingsDep, follow: bool = False,
                         token: str | None = None) -> None:
    if not may_join(socket, settings, follow):
        await socket.close(code=4403, reason="origin not allowed")
        return
    await socket.accept()
    payer = payer_of(socket.headers, socket.client.host if socket.client else None, token)
    shares: Shares = socket.app.state.shares
    if not shares.open_socket(payer, settings.client_max_sockets):
        await refuse(socket, "you have the most sockets open one client may "
                             "(client_max_sockets)", "limit", 4429)
        return
    try:
        await join(socket, session_id, registry, settings, follow, token, payer)
    finally:
        shares.close_socket(payer)


async def refuse(socket: WebSocket, message: str, code: P.ErrorCode, close: int) -> None:
    await socket.send_text(dump(P.Error(message=message, code=code)))
    await socket.close(code=close)


async def join(socket: WebSocket, session_id: str, registry: Registry, settings: Settings,
               follow: bool, token: str | None, payer: str) -> None:
    created = session_id == "new" and not follow
    try:
        session = registry.create(payer) if created else registry.get(session_id)
    except SessionError as err:
        await refuse(socket, str(err), P.error_code(err.code),
                     4507 if err.code == "storage_full" else 4429)
        return
    if session is None or len(session.viewers) >= settings.max_viewers_per_session:
        await refuse(socket, "no such session" if session is None else
                     "too many viewers on this session",
                     "not_found" if session is None else "limit",
                     4404 if session is None else 4429)
        return
    role = access.role_for(session, token, follow, created=created)
    outlet = Outlet(socket.app.state.outflow, socket)  # dropped if it stops reading
    viewer = Viewer(session, outlet.send, role)
    session.join(viewer)
    sender = asyncio.create_task(viewer.run())
    try:
        await receive_loop(socket, session, viewer, settings, created, sender)
    finally:
        outlet.close()
        session.leave(viewer)
        if created:
            registry.discard_unbuilt(session)
        sender.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await sender


async def receive_loop(socket: WebSocket, session: Session, viewer: Viewer,
                       settings: Settings, created: bool, sender: asyncio.Task[None]) -> None:
    """Apply the client's messages until it leaves; a socket that made a session and has not
    configured it in `unconfigured_timeout_s`, or a driver quiet for `session_idle_s` while
    nothing plays, is closed (4408) so that it holds no share of the server."""
    unconfigured_by = time.monotonic() + settings.unconfigured_timeout_s
    while True:
        if created and session.built is None:
            wait: float | None = unconfigured_by - time.monotonic()
        else:
            wait = settings.session_idle_s if viewer.role == "driver" else None
        try:
            async with asyncio.timeout(wait):
                message = await socket.receive()
        except TimeoutError:
            if session.built is not None and session.playing:
                continue
            why = "not configured in time" if session.built is None else "idle"
            await socket.close(code=4408, reason=why)
            return
        if message["type"] == "websocket.disconnect":
            return
        text = message.get("text")
        if text is None:
            text = message.get("bytes") or b""
        if len(text) > control.message_limit(session, viewer):
            # what the server's transport does past ws_max_size (cli/serve.py); the session
            # lives on and the page reconnects with its token
            await socket.close(code=1009, reason="message too big")
            return
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        await control.handle(session, viewer, text)
        if sender.done():
            return
