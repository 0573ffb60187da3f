"""GET /metrics: vLLM's Prometheus metrics of every session, in the Prometheus text format."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

router = APIRouter(tags=["metrics"])


@router.get("/metrics", include_in_schema=False)
async def metrics(request: Request) -> Response:
    # On the event loop, not a worker thread: no track advances while the scrape reads it.
    return Response(generate_latest(request.app.state.metrics), media_type=CONTENT_TYPE_LATEST)
