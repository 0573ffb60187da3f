"""What the routers share: a 404 for an id that names nothing, the built session a path names
(an Annotated dependency), build and session errors as HTTP errors, and a client's hourly
share of uploads or sweeps taken or refused."""

from __future__ import annotations

from typing import Annotated, TypeVar

from fastapi import Depends, HTTPException, Request

from servescope.api.deps import RegistryDep
from servescope.api.errors import BuildError, SessionError
from servescope.api.sessions.session import Session
from servescope.api.web.clients import Shares

T = TypeVar("T")
# any other error code is a 400; the data directory full or unwritable is the server's fault
STATUS = {"limit": 429, "not_found": 404, "too_large": 413, "busy": 503, "memory": 503,
          "storage_full": 507, "storage": 500, "internal": 500, "out_of_range": 422,
          "conflict": 409}


def found(value: T | None, detail: dict[str, str]) -> T:
    """`value`, or a 404 with `detail` ({message, field[, code]}) when there is none."""
    if value is None:
        raise HTTPException(404, detail)
    return value


def built_session(registry: RegistryDep, session_id: str) -> Session:
    session = registry.get(session_id)
    built = session if session is not None and session.built is not None else None
    return found(built, {"message": "no such session", "field": "session_id",
                         "code": "not_found"})


BuiltSessionDep = Annotated[Session, Depends(built_session)]


def http_error(err: BuildError | SessionError) -> HTTPException:
    detail = {"message": str(err), "field": err.field, "code": err.code}
    return HTTPException(STATUS.get(err.code, 400), detail)


def take_hourly(request: Request, what: str, payer: str, per_hour: int,
                refusal: dict[str, str], headers: dict[str, str] | None = None) -> None:
    """Count one `what` (upload, sweep) for `payer` (api/web/clients.py's Shares.take), or
    refuse it: 429 with `refusal` ({message, field}) and Retry-After, the seconds until it may."""
    shares: Shares = request.app.state.shares
    if wait := shares.take(what, payer, per_hour):
        raise HTTPException(429, refusal, {"Retry-After": str(int(wait)), **(headers or {})})
