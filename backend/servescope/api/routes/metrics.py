"""GET /metrics: vLLM's Prometheus metrics of every session, then the server's own (HTTP),
in the Prometheus text format."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

router = APIRouter(tags=["metrics"])


@router.get("/metrics", include_in_schema=False)
async def metrics(request: Request) -> Response:
    # On the event loop, not a worker thread: no track advances while the scrape reads it.
    state = request.app.state
    body = state.sessions_metrics.text().encode() + generate_latest(state.metrics)
    return Response(body, media_type=CONTENT_TYPE_LATEST)
