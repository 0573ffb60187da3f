"""A session's run diagnosed: the dominant bottleneck, its evidence and the knobs to turn."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query

from servescope.api.build import BuildError
from servescope.api.deps import RegistryDep, StoreDep
from servescope.api.diagnosis import diagnose_session
from servescope.api.session import SessionError

router = APIRouter(prefix="/api", tags=["diagnosis"])
STATUS = {"limit": 429, "not_found": 404}


@router.get("/sessions/{session_id}/diagnosis")
async def diagnosis(registry: RegistryDep, store: StoreDep, session_id: str,
                    engine: Annotated[int, Query(ge=0, le=3)] = 0,
                    check: bool = False, full: bool = False) -> dict[str, Any]:
    session = registry.get(session_id)
    if session is None or session.built is None:
        raise HTTPException(404, {"message": "no such session", "field": "session_id",
                                  "code": "not_found"})
    try:
        return await diagnose_session(session, store, engine, check, full)
    except (BuildError, SessionError) as err:
        detail = {"message": str(err), "field": err.field, "code": err.code}
        raise HTTPException(STATUS.get(err.code, 400), detail) from err
