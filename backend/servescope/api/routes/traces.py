"""Trace uploads: multipart, streamed to disk under the size limit, parsed with the upload's
options in a job worker (its memory budget and deadline), then committed."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, HTTPException, Request

from servescope.api.deps import RegistryDep, SettingsDep, StoreDep, UploadOwnerDep, UploadTokenDep
from servescope.api.errors import JobError, UploadError
from servescope.api.jobs.pool import Jobs
from servescope.api.routes._lookup import found, http_error, take_hourly
from servescope.api.sessions.registry import Registry
from servescope.api.settings import Settings
from servescope.api.uploads import owner as owners
from servescope.api.uploads import receive as uploads
from servescope.api.uploads.store import Store
from servescope.api.web.clients import payer_of
from servescope.traces import registry
from servescope.traces.upload_options import FIELDS

router = APIRouter(prefix="/api", tags=["traces"])
OPTION_TYPES = {str: "string", int: "integer", float: "number"}
CLOSE = {"Connection": "close"}
MIB = 1024 * 1024
# Uploads parsing or waiting to at once, beyond the running ones: a classroom uploading
# together (tests/api/uploads/test_upload_concurrency.py sends twenty); beyond it 503 busy.
MAX_UPLOADS_WAITING = 32
UPLOAD_BODY = {"requestBody": {"required": True, "content": {"multipart/form-data": {"schema": {
    "type": "object", "required": ["file"],
    "properties": {"file": {"type": "string", "format": "binary"},
                   **{name: {"type": OPTION_TYPES[kind], "description": text}
                      for name, (kind, text) in FIELDS.items()}}}}}}}
UPLOAD_DESCRIPTION = """Upload a trace file (multipart field `file`) in any format the server
reads, plain or gzip (the size limit holds for the inflated bytes, as does a cap on the
inflation ratio, `max_upload_ratio`; the inflated file is what is stored). The other form
fields are options, applied in this order: `window_start_s` /
`window_end_s` (seconds after the trace's first request; arrivals rebased to the window start),
then `limit` (the first N) or `sample_n` (a uniform sample of N, seeded by `seed`), then
`arrival_scale` and `length_scale`; `format` overrides detection; `rate_per_s` gives a
sharegpt-stats file (lengths only) Poisson arrivals, and `sample_n` or `limit` its number of
requests. A blank field is absent; an unknown one is refused. The
trace is stored with its options (GET /api/traces/{id} reports them) and every session on it
loads it with them. A request trace with more requests than a session may hold is refused
(413) with its count and the window that would fit; a bad option is a 400 whose `field` names
it. Nothing is stored unless the upload succeeds.

An upload is private to the client that made it: the answer carries `upload_token`, which
listing or using the upload needs (the `X-Upload-Token` header on REST, `upload_token` beside
`trace` in a configure's workload). Send the token you hold with later uploads so that they
are all yours under one token; without one a new token is made."""


@router.post("/traces", status_code=201, openapi_extra=UPLOAD_BODY,
             description=UPLOAD_DESCRIPTION,
             responses={400: {"description": "not a trace, or a bad option: message, line, "
                                             "field"},
                        413: {"description": "larger than the upload limit, or more requests "
                                             "than a session holds (num_requests, "
                                             "max_requests, fits_end_s)"},
                        501: {"description": "the format's reader needs a package this server "
                                             "lacks"}})
async def upload_trace(request: Request, store: StoreDep, settings: SettingsDep,
                       registry: RegistryDep, given: UploadTokenDep) -> dict[str, Any]:
    token = given or owners.new_token()
    payer = payer_of(request.headers, request.client.host if request.client else None)
    limit = upload_share(request, payer, store, registry, settings)
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit + 65536:
        raise HTTPException(413, {"message": f"upload larger than the limit of {limit} bytes "
                                             "(max_upload_mb, and what is left of your and "
                                             "the server's storage quota)"}, CLOSE)
    try:
        stored = await uploads.receive(request.stream(), request.headers.get("content-type", ""),
                                       store, limit,
                                       settings.max_requests_per_session,
                                       settings.max_upload_ratio,
                                       lambda *args: upload_jobs(request, settings).call(
                                           "upload", uploads.parse_upload, *args),
                                       owner=owners.owner_of(token))
    except JobError as err:  # busy, over its memory budget or its deadline
        raise http_error(err) from err
    except UploadError as err:  # a 413 closes the connection: the rest goes unread
        raise HTTPException(err.status, err.detail, CLOSE if err.status == 413 else None) \
            from err
    await asyncio.to_thread(store.claim, stored["trace_id"], payer)
    summary = dict(stored["summary"])
    report = summary.pop("report", {})
    return {"trace_id": stored["trace_id"], "upload_token": token, "format": stored["format"],
            "num_requests": stored["num_requests"], "filename": stored["filename"],
            "size": stored["size"], "options": stored["options"], "summary": summary,
            "report": report}


def upload_share(request: Request, payer: str, store: Store, registry: Registry,
                 settings: Settings) -> int:
    """The most bytes this upload may store: the upload limit, or less where the client's
    stored bytes or the data directory near their quotas; refused (429, 507) when nothing is
    left or the client uploaded its most this hour."""
    take_hourly(request, "upload", payer, settings.client_max_uploads_per_hour,
                {"message": "you uploaded the most one client may in an hour "
                            "(client_max_uploads_per_hour)", "field": "file"}, CLOSE)
    mine = settings.client_max_stored_mb * MIB - store.stored_bytes(payer)
    free = settings.data_quota_mb * MIB - registry.data_used()
    if mine <= 0:
        raise HTTPException(429, {"message": "your uploads fill your share of this server's "
                                  "storage (client_max_stored_mb)", "field": "file"}, CLOSE)
    if free <= 0:
        raise HTTPException(507, {"message": "the data directory is over its quota "
                                  "(data_quota_mb) until uploads expire", "field": "file"},
                            CLOSE)
    return min(settings.max_upload_bytes, mine, free)


def upload_jobs(request: Request, settings: Settings) -> Jobs:
    """The uploads' own job pool (worker processes with a memory budget and a deadline), so
    a classroom's uploads queue apart from the reports' jobs."""
    state = request.app.state
    if getattr(state, "upload_jobs", None) is None:
        state.upload_jobs = Jobs(settings.max_jobs, settings.job_timeout_s,
                                 MAX_UPLOADS_WAITING, settings.memory_cap_mb)
    return state.upload_jobs  # type: ignore[no-any-return]


@router.get("/traces")
def list_traces(store: StoreDep, owner: UploadOwnerDep) -> list[dict[str, Any]]:
    """The uploads of the client whose `X-Upload-Token` this is (none without one), each with
    its format's kind (`requests` or a recorded run's `steps`)."""
    return [{**t, "kind": registry.FORMATS[t["format"]].kind} for t in store.traces(owner)]


@router.get("/traces/formats")
def list_formats() -> list[dict[str, str]]:
    """The formats an upload's `format` option may name."""
    return [{"name": f.name, "kind": f.kind, "description": f.description}
            for f in registry.FORMATS.values()]


@router.get("/traces/{trace_id}")
def get_trace(store: StoreDep, owner: UploadOwnerDep, trace_id: str) -> dict[str, Any]:
    """An upload of the `X-Upload-Token` client's; another's is a 404, as a missing one."""
    return found(store.trace(trace_id, owner),
                 {"message": "no such trace", "field": "trace_id"})
