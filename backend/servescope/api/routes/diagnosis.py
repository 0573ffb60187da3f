"""A session's run diagnosed: the dominant bottleneck, its evidence and the knobs to turn."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from servescope.api.deps import StoreDep
from servescope.api.errors import BuildError, SessionError
from servescope.api.reports.diagnosis import diagnose_session
from servescope.api.routes._lookup import BuiltSessionDep, http_error

router = APIRouter(prefix="/api", tags=["diagnosis"])


@router.get("/sessions/{session_id}/diagnosis")
async def diagnosis(session: BuiltSessionDep, store: StoreDep,
                    engine: Annotated[int, Query(ge=0, le=3)] = 0,
                    check: bool = False, full: bool = False,
                    from_iter: Annotated[int | None, Query(ge=0)] = None,
                    to_iter: Annotated[int | None, Query(ge=0)] = None) -> dict[str, Any]:
    """`from_iter` and `to_iter` (both, inclusive) diagnose a window of the run's records."""
    window = (from_iter, to_iter) if from_iter is not None and to_iter is not None else None
    try:
        return await diagnose_session(session, store, engine, check, full, window)
    except (BuildError, SessionError) as err:
        raise http_error(err) from err
