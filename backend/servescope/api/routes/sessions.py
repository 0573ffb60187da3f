"""Sessions over REST: list, create, describe, their request lists in pages, run summaries,
exports, save as a scenario."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Header, Query, Request
from fastapi.responses import Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, model_validator

from servescope.api.deps import RegistryDep, StoreDep
from servescope.api.errors import BuildError, SessionError
from servescope.api.reports import runs
from servescope.api.routes._lookup import BuiltSessionDep, found, http_error
from servescope.api.sessions import access
from servescope.api.web.clients import payer_of
from servescope.api.wire import protocol as P
from servescope.api.wire.request_page import RequestPage
from servescope.observability import openmetrics as om

router = APIRouter(prefix="/api", tags=["sessions"])


class NewSession(BaseModel):
    model_config = ConfigDict(extra="forbid")
    config: dict[str, Any] | None = None
    configs: list[dict[str, Any]] | None = Field(default=None, min_length=2, max_length=4)
    workload: P.WorkloadSpec | None = None

    @model_validator(mode="after")
    def _not_both(self) -> NewSession:
        if self.config is not None and self.configs is not None:
            raise ValueError("give config or configs, not both")
        return self


class ScenarioName(BaseModel):
    name: str = Field(min_length=1, max_length=200)


@router.get("/sessions")
def list_sessions(registry: RegistryDep, x_session_token: Annotated[
        str | None, Header(max_length=4096)] = None) -> list[dict[str, Any]]:
    """Only the sessions whose driver token the caller presents (`X-Session-Token: T1, T2`)."""
    mine = access.owned(registry.sessions.values(), access.tokens_in(x_session_token))
    return [runs.describe(s, with_token=True) for s in mine]


@router.post("/sessions", status_code=201,
             responses={429: {"description": "the server's or this client's most sessions"},
                        507: {"description": "the data directory is over its quota"}})
async def create_session(request: Request, registry: RegistryDep,
                         body: NewSession) -> dict[str, Any]:
    msg = P.Configure(type="configure", **body.model_dump(exclude_none=True))
    payer = payer_of(request.headers, request.client.host if request.client else None)
    try:
        return runs.describe(await registry.create_configured(msg, payer), with_token=True)
    except (BuildError, SessionError) as err:
        raise http_error(err) from err


@router.get("/sessions/{session_id}")
def get_session(session: BuiltSessionDep) -> dict[str, Any]:
    return runs.describe(session)


MAX_REQUEST_PAGE = 10_000  # requests a page at most (about 0.9 MB of JSON)


@router.get("/sessions/{session_id}/requests", response_model=RequestPage)
def request_page(session: BuiltSessionDep, engine: Annotated[int, Query(ge=0, le=3)] = 0,
                 offset: Annotated[int, Query(ge=0)] = 0,
                 limit: Annotated[int, Query(ge=1, le=MAX_REQUEST_PAGE)] = MAX_REQUEST_PAGE,
                 ) -> Response:
    """The session's requests from `offset` (init's order, which records and keyframes index);
    followers may read it too. The page is built as JSON directly: 10,000 rows through the
    response model would cost more than the rows themselves."""
    try:
        text = runs.request_page(session, engine, offset, limit)
    except SessionError as err:
        raise http_error(err) from err
    return Response(text, media_type="application/json")


@router.get("/sessions/{session_id}/summary")
async def summary(session: BuiltSessionDep) -> list[dict[str, Any]]:
    try:
        return await runs.summaries(session)
    except SessionError as err:  # reconfigured or closed while it waited, or too long
        raise http_error(err) from err


@router.get("/sessions/{session_id}/export")
async def export(session: BuiltSessionDep,
                 format: Annotated[str, Query(max_length=12)] = "jsonl",
                 engine: Annotated[int, Query(ge=0, le=3)] = 0,
                 epoch: Annotated[float | None, Query(ge=0, le=1e11)] = None,
                 interval_s: Annotated[float, Query(gt=0, le=3600)] = 1.0,
                 ) -> StreamingResponse:
    try:
        media, chunks = await runs.export(session, engine, format, epoch, interval_s)
    except SessionError as err:
        raise http_error(err) from err
    ext = {"application/x-ndjson": "jsonl", "text/csv": "csv",
           om.MEDIA_TYPE: "om.txt"}.get(media, "json")
    headers = {"Content-Disposition": f'attachment; filename="servescope-run.{ext}"'}
    return StreamingResponse(chunks, media_type=media, headers=headers)


@router.post("/sessions/{session_id}/scenario", status_code=201)
def save_scenario(session: BuiltSessionDep, store: StoreDep,
                  body: Annotated[ScenarioName, Body()]) -> dict[str, Any]:
    built = session.built
    assert built is not None
    try:
        saved = store.save_scenario(body.name, {
            "configs": built.configs, "workload": built.workload.model_dump(exclude_none=True)})
    except SessionError as err:
        raise http_error(err) from err
    session.saved = True  # kept for the idle time, not just the grace period
    return saved


@router.get("/scenarios")
def list_scenarios(store: StoreDep) -> list[dict[str, Any]]:
    return store.scenarios()


@router.get("/scenarios/{scenario_id}")
def get_scenario(store: StoreDep, scenario_id: str) -> dict[str, Any]:
    return found(store.scenario(scenario_id), {"message": "no such scenario",
                                               "field": "scenario_id", "code": "not_found"})
