"""Applying one client message to a session: parse it, check the viewer may send it, act.
A bad message gets an `error` reply and changes nothing."""

from __future__ import annotations

import logging

from pydantic import ValidationError

from servescope.api.errors import BuildError, SessionError
from servescope.api.sessions.drill import view_replica
from servescope.api.sessions.live import REFUSED
from servescope.api.sessions.session import Session
from servescope.api.sessions.viewer import Viewer
from servescope.api.web import edge
from servescope.api.wire import protocol as P
from servescope.api.wire.fleet import ViewReplica

log = logging.getLogger(__name__)


# A follower may say nothing that changes the session, so nothing it says need be longer than
# this: a message over it closes the socket (1009) before anything reads it.
FOLLOWER_MESSAGE_BYTES = 512


def message_limit(session: Session, viewer: Viewer) -> int:
    """The longest message this viewer may send; a longer one closes its socket (1009)."""
    if viewer.role == "follower":
        return FOLLOWER_MESSAGE_BYTES
    return session.settings.max_message_bytes


async def handle(session: Session, viewer: Viewer, text: str) -> None:
    """Applies one message within message_limit (the socket checked it): a follower's is
    refused unread; a large one is parsed on a thread."""
    if viewer.role == "follower":
        viewer.reply(message="this viewer follows the session read-only", field=None,
                     code="read_only")
        return
    try:
        await edge.off_loop(edge.loads, text)
    except edge.Refused as err:
        viewer.reply(message=str(err), field=err.field or None, code="bad_message")
        return
    except ValueError:
        pass  # not JSON: the protocol's validation says so
    try:
        msg = await edge.off_loop(P.CLIENT.validate_json, text)
    except ValidationError as err:
        first = err.errors()[0]
        field = ".".join(str(x) for x in first["loc"]) or None
        viewer.reply(message=f"{field or 'message'}: {first['msg']}", field=field,
                     code="bad_message")
        return
    try:
        await apply(session, viewer, msg)
    except (BuildError, SessionError) as err:
        viewer.reply(message=str(err), field=err.field, code=err.code)
    except Exception:  # a bug must not end the session for everyone
        log.exception("session %s: failed to apply %s", session.id, type(msg).__name__)
        viewer.reply(message="internal error applying the message", field=None,
                     code="bad_message")


async def apply(session: Session, viewer: Viewer, msg: object) -> None:
    session.last_active = session.clock()
    if session.live and isinstance(msg, P.Configure | P.Reset):
        raise SessionError(REFUSED, "type", "read_only")
    if isinstance(msg, P.Configure):
        session.jobs.check_memory("configure")  # a new run's engines: not over the cap
        if not await session.configure(msg):
            viewer.resync()
        return
    if session.built is None:
        raise SessionError("configure the session first", None, "bad_message")
    if isinstance(msg, P.Play):
        session.play(msg.speed)
    elif isinstance(msg, P.Pause):
        session.pause()
    elif isinstance(msg, P.StepCmd):
        await session.step(msg.n)
    elif isinstance(msg, P.Seek):
        await session.seek(msg)
    elif isinstance(msg, ViewReplica):
        await view_replica(session, msg)
    elif isinstance(msg, P.Reset):
        session.reset()
    elif isinstance(msg, P.Lesson):
        session.set_lesson(msg)
