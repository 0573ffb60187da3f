"""The session WebSocket: origin check, join (driver or follower), then one sender task and
the receive loop that applies client messages (docs/protocol.md)."""

from __future__ import annotations

import asyncio
import contextlib

from fastapi import APIRouter, WebSocket

from servescope.api.deps import RegistryDep, SettingsDep
from servescope.api.errors import SessionError
from servescope.api.sessions import access
from servescope.api.sessions.viewer import Viewer
from servescope.api.settings import Settings
from servescope.api.web import control
from servescope.api.web.origin import origin_allowed
from servescope.api.web.outflow import Outlet
from servescope.api.wire import protocol as P
from servescope.api.wire.text import dump

router = APIRouter()


def may_join(socket: WebSocket, settings: Settings, follow: bool) -> bool:
    """A driver's page must be one of ours (a browser always sends Origin); a follower without
    one (a script) only reads."""
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
    try:
        session = registry.create() if session_id == "new" and not follow \
            else registry.get(session_id)
    except SessionError as err:
        await socket.send_text(dump(P.Error(message=str(err), code=err.code)))
        await socket.close(code=4429)
        return
    if session is None or len(session.viewers) >= settings.max_viewers_per_session:
        message = "no such session" if session is None else "too many viewers on this session"
        await socket.send_text(dump(P.Error(
            message=message, code="not_found" if session is None else "limit")))
        await socket.close(code=4404 if session is None else 4429)
        return
    role = access.role_for(session, token, follow, created=session_id == "new")
    outlet = Outlet(socket.app.state.outflow, socket)  # dropped if it stops reading
    viewer = Viewer(session, outlet.send, role)
    session.join(viewer)
    sender = asyncio.create_task(viewer.run())
    try:
        while True:
            message = await socket.receive()
            if message["type"] == "websocket.disconnect":
                break
            text = message.get("text")
            if text is None:
                text = message.get("bytes") or b""
            if len(text) > control.message_limit(session, viewer):
                # what the server's transport does past ws_max_size (cli/serve.py); the
                # session lives on and the page reconnects with its token
                await socket.close(code=1009, reason="message too big")
                break
            if isinstance(text, bytes):
                text = text.decode("utf-8", "replace")
            await control.handle(session, viewer, text)
            if sender.done():
                break
    finally:
        outlet.close()
        session.leave(viewer)
        sender.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await sender
