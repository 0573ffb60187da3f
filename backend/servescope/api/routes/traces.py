"""Trace uploads: multipart, streamed to disk under the size limit, parsed, then committed."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Request

from servescope.api import uploads
from servescope.api.deps import SettingsDep, StoreDep
from servescope.api.routes._lookup import found

router = APIRouter(prefix="/api", tags=["traces"])
UPLOAD_BODY = {"requestBody": {"required": True, "content": {"multipart/form-data": {"schema": {
    "type": "object", "required": ["file"],
    "properties": {"file": {"type": "string", "format": "binary"}}}}}}}


@router.post("/traces", status_code=201, openapi_extra=UPLOAD_BODY,
             responses={400: {"description": "not a trace: message, line, field"},
                        413: {"description": "larger than the upload limit"}})
async def upload_trace(request: Request, store: StoreDep, settings: SettingsDep) -> dict[str, Any]:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > settings.max_upload_bytes + 65536:
        raise HTTPException(413, {"message": "upload larger than the limit of "
                                             f"{settings.max_upload_bytes} bytes"})
    try:
        stored = await uploads.receive(request.stream(), request.headers.get("content-type", ""),
                                       store, settings.max_upload_bytes)
    except uploads.UploadError as err:
        raise HTTPException(err.status, err.detail) from err
    summary = dict(stored["summary"])
    report = summary.pop("report", {})
    return {"trace_id": stored["trace_id"], "format": stored["format"],
            "num_requests": stored["num_requests"], "filename": stored["filename"],
            "size": stored["size"], "summary": summary, "report": report}


@router.get("/traces")
def list_traces(store: StoreDep) -> list[dict[str, Any]]:
    return store.traces()


@router.get("/traces/{trace_id}")
def get_trace(store: StoreDep, trace_id: str) -> dict[str, Any]:
    return found(store.trace(trace_id), {"message": "no such trace", "field": "trace_id"})
