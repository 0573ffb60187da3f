"""The OpenAI API's app for one port: the routes, that port's /metrics (vLLM's series of the
engines it serves), the time-scale header on every answer, and, on the explorer's port, the
explorer mounted beneath it (its own lifespan run inside this one)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence

from fastapi import FastAPI, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from servescope.api.openai import routes
from servescope.api.openai.live import LiveEngine
from servescope.api.openai.metrics import LiveCollector, exposition
from servescope.api.openai.serving import Served

TIME_SCALE_HEADER = "X-ServeScope-Time-Scale"


class TimeScaleHeader:
    """Every answer says the time scale when it is not 1 (a client's latencies are scaled)."""

    def __init__(self, app: ASGIApp, time_scale: float) -> None:
        self.app, self.value = app, f"{time_scale:g}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_header(message: Message) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"],
                                      (TIME_SCALE_HEADER.lower().encode(), self.value)]
            await send(message)

        await self.app(scope, receive, with_header)


def openai_app(served: Served, collector: LiveCollector, explorer: FastAPI | None = None,
               runs: Sequence[LiveEngine] = ()) -> FastAPI:
    """The API over `served`; `runs`: the live engines whose clock loops this app's lifespan
    runs (and closes)."""

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        loops = [asyncio.create_task(live.run()) for live in runs]
        inner = (explorer.router.lifespan_context(explorer) if explorer is not None
                 else contextlib.nullcontext())
        try:
            async with inner:
                yield
        finally:
            for live in runs:
                live.close()
            await asyncio.gather(*loops, return_exceptions=True)

    app = FastAPI(title="ServeScope OpenAI-compatible API", lifespan=lifespan,
                  docs_url=None, redoc_url=None, openapi_url=None)
    app.state.served = served
    app.include_router(routes.router)

    @app.get("/metrics")
    async def metrics() -> Response:
        return Response(exposition(collector),
                        media_type="text/plain; version=0.0.4; charset=utf-8")

    if explorer is not None:
        app.mount("/", explorer)
    if served.time_scale != 1:
        app.add_middleware(TimeScaleHeader, time_scale=served.time_scale)
    return app
