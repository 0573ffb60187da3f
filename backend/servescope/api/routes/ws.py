"""The session WebSocket: origin check, join (driver or follower), then one sender task and
the receive loop that applies client messages (docs/protocol.md)."""

from __future__ import annotations

import asyncio
import contextlib
from urllib.parse import urlsplit

from fastapi import APIRouter, WebSocket

from servescope.api import access, control
from servescope.api.deps import RegistryDep, SettingsDep
from servescope.api.session import SessionError
from servescope.api.settings import Settings
from servescope.api.viewer import Viewer

router = APIRouter()


def origin_allowed(socket: WebSocket, settings: Settings) -> bool:
    """Browsers send Origin: it must be this server's own host or an allowed origin.
    Clients that send none (scripts, tests) are not browsers and pass."""
    origin = socket.headers.get("origin")
    if origin is None:
        return True
    if origin in settings.allowed_origins:
        return True
    return urlsplit(origin).netloc == socket.headers.get("host", "")


@router.websocket("/ws/sessions/{session_id}")
async def session_socket(socket: WebSocket, session_id: str, registry: RegistryDep,
                         settings: SettingsDep, follow: bool = False,
                         token: str | None = None) -> None:
    if not origin_allowed(socket, settings):
        await socket.close(code=4403, reason="origin not allowed")
        return
    await socket.accept()
    try:
        session = registry.create() if session_id == "new" and not follow \
            else registry.get(session_id)
    except SessionError as err:
        await socket.send_json({"type": "error", "v": 1, "message": str(err), "field": None,
                                "code": err.code})
        await socket.close(code=4429)
        return
    if session is None or len(session.viewers) >= settings.max_viewers_per_session:
        message = "no such session" if session is None else "too many viewers on this session"
        await socket.send_json({"type": "error", "v": 1, "message": message, "field": None,
                                "code": "not_found" if session is None else "limit"})
        await socket.close(code=4404 if session is None else 4429)
        return
    role = access.role_for(session, token, follow, created=session_id == "new")
    viewer = Viewer(session, socket.send_text, role)
    session.viewers.add(viewer)
    sender = asyncio.create_task(viewer.run())
    try:
        while True:
            message = await socket.receive()
            if message["type"] == "websocket.disconnect":
                break
            text = message.get("text")
            if text is None:
                text = (message.get("bytes") or b"").decode("utf-8", "replace")
            await control.handle(session, viewer, text)
            if sender.done():
                break
    finally:
        session.viewers.discard(viewer)
        session.last_active = session.clock()
        sender.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await sender
