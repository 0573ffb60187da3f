"""GET /metrics: vLLM's Prometheus metrics of every session, then the server's own (HTTP),
in the Prometheus text format."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from servescope.api.reports.metrics import render_text

router = APIRouter(tags=["metrics"])


@router.get("/metrics", include_in_schema=False)
async def metrics(request: Request) -> Response:
    # Read on the event loop (no track advances while the scrape reads it), written as text
    # on a worker thread (the loop serves others meanwhile).
    state = request.app.state
    samples, own = state.sessions_metrics.snapshot()
    body = await asyncio.to_thread(
        lambda: render_text(samples, own).encode() + generate_latest(state.metrics))
    return Response(body, media_type=CONTENT_TYPE_LATEST)
