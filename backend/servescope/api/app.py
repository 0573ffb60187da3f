"""The app factory: settings, store and session registry made in the lifespan, one router per
resource, static files (ours and uPlot from node_modules) and the checks at the edge
(api/web/edge.py: bounded, finite JSON; cross-site writes refused; security headers)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable

from fastapi import FastAPI, Request
from fastapi.staticfiles import StaticFiles
from prometheus_client import CollectorRegistry

from servescope.api.jobs.sweeps import Sweeps
from servescope.api.reports.metrics import HttpMetrics, SessionsCollector
from servescope.api.routes import (
    diagnosis,
    metrics,
    overview,
    pages,
    presets,
    sessions,
    sweeps,
    traces,
    ws,
)
from servescope.api.sessions.registry import Registry
from servescope.api.settings import Settings
from servescope.api.uploads.store import Store
from servescope.api.web import edge
from servescope.api.web.classroom import classroom_settings
from servescope.api.web.clients import Shares
from servescope.api.web.origin import host_refusal, origin_allowed
from servescope.api.web.outflow import CaptureTransport, Outflow


def create_app(settings: Settings | None = None,
               clock: Callable[[], float] = time.monotonic) -> FastAPI:
    settings = classroom_settings(settings or Settings.from_env())

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        store = Store(settings.data_dir)
        registry = Registry(settings, store, clock)
        app.state.store, app.state.registry = store, registry
        jobs = registry.jobs
        app.state.sweeps = Sweeps(settings.sweep_ray_address, settings.sweep_num_cpus,
                                  settings.sweep_idle_s, settings.sweep_deadline_s,
                                  lambda: 0 < jobs.memory_cap < jobs.memory())
        jobs.others = lambda: registry.scouts_memory() + app.state.sweeps.memory()
        app.state.sessions_metrics = SessionsCollector(registry)
        reaper = asyncio.create_task(registry.reap_loop())
        try:
            yield
        finally:
            reaper.cancel()
            await asyncio.to_thread(app.state.sweeps.close)
            registry.close()
            store.close()

    app = FastAPI(title="ServeScope", version="0.1.0", lifespan=lifespan,
                  description="A visual explorer of LLM serving-engine internals. "
                              "The WebSocket protocol is in docs/protocol.md.")
    app.state.settings = settings
    app.state.shares = Shares()
    app.state.outflow = Outflow(settings.send_timeout_s, settings.max_buffered_bytes)
    app.state.metrics = CollectorRegistry(auto_describe=False)
    for module in (pages, presets, sessions, traces, ws, diagnosis, sweeps, metrics,
                   overview):
        app.include_router(module.router)
    app.mount("/static", StaticFiles(directory=settings.frontend_dir / "static"), name="static")
    uplot = settings.node_modules / "uplot" / "dist"
    if uplot.is_dir():
        app.mount("/vendor/uplot", StaticFiles(directory=uplot), name="uplot")

    def may_write(request: Request) -> bool:
        origin = request.headers.get("origin")  # none: not a browser, so not a forged request
        return origin is None or origin_allowed(origin, request.headers.get("host"), settings)

    app.middleware("http")(HttpMetrics(app.state.metrics).middleware)
    edge.install(app, may_write, settings.max_message_bytes,
                 lambda host: host_refusal(host, settings))
    app.add_middleware(CaptureTransport)
    return app
