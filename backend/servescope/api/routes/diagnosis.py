"""A session's run diagnosed: the dominant bottleneck, its evidence and the knobs to turn."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from servescope.api.build import BuildError
from servescope.api.deps import StoreDep
from servescope.api.diagnosis import diagnose_session
from servescope.api.routes._lookup import BuiltSessionDep, http_error
from servescope.api.session import SessionError

router = APIRouter(prefix="/api", tags=["diagnosis"])


@router.get("/sessions/{session_id}/diagnosis")
async def diagnosis(session: BuiltSessionDep, store: StoreDep,
                    engine: Annotated[int, Query(ge=0, le=3)] = 0,
                    check: bool = False, full: bool = False) -> dict[str, Any]:
    try:
        return await diagnose_session(session, store, engine, check, full)
    except (BuildError, SessionError) as err:
        raise http_error(err) from err
