"""The explorer page (boot data says which session to open and how: a new private session, a
session driven with its token, or followed read-only), its share QR code, and the health check."""

from __future__ import annotations

import functools
import io
import secrets
from typing import Annotated, Any

import segno
from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.templating import Jinja2Templates

from servescope.api.deps import RegistryDep, SettingsDep
from servescope.api.routes._lookup import found
from servescope.api.sessions import access
from servescope.api.settings import Settings
from servescope.api.uploads.store import valid_id
from servescope.api.web.classroom import public_url, share_url
from servescope.api.web.origin import refusal
from servescope.core.config import EngineConfig, field_schema
from servescope.scenarios.workloads import SYNTHETIC_FIELDS, list_presets, preset_workload
from servescope.sweep.grid import GRID_KEYS
from servescope.sweep.slo import METRICS

router = APIRouter(tags=["pages"])
Id = Annotated[str | None, Query(max_length=64)]
Origin = Annotated[str, Query(max_length=200)]


@router.get("/api/config/fields")
def config_fields() -> dict[str, list[dict[str, Any]]]:
    """The engine-config and synthetic-workload fields: names, kinds, defaults, bounds, choices
    and help, as EngineConfig and the synthetic workload check them (the page builds and
    validates its forms from this)."""
    return {"config": field_schema(), "synthetic": SYNTHETIC_FIELDS}


@router.get("/favicon.ico", include_in_schema=False)
def favicon(settings: SettingsDep) -> FileResponse:
    """Browsers and crawlers that ask for /favicon.ico get the page's own SVG icon."""
    return FileResponse(settings.frontend_dir / "static" / "favicon.svg",
                        media_type="image/svg+xml")


@router.get("/healthz")
def healthz(registry: RegistryDep) -> dict[str, Any]:
    return {"ok": True, "sessions": len(registry.sessions)}


@router.get("/api/origin")
def origin_check(request: Request, settings: SettingsDep, origin: Origin) -> dict[str, Any]:
    """Whether a page at `origin` (the page's own, as it reached this server) may open a
    session's socket, and if not why: a refused WebSocket handshake tells the page nothing."""
    reason = refusal(origin, request.headers.get("host"), settings)
    return {"allowed": reason is None, "reason": reason}


@router.get("/", response_class=HTMLResponse)
def index(request: Request, registry: RegistryDep, settings: SettingsDep, session: Id = None,
          follow: bool = False, token: Id = None) -> HTMLResponse:
    nonce = secrets.token_urlsafe(16)
    request.state.csp_nonce = nonce
    templates = Jinja2Templates(directory=settings.frontend_dir / "templates")
    joined = registry.get(session) if session is not None and valid_id(session) else None
    if session is not None and joined is None:
        return templates.TemplateResponse(request, "no_session.html", {
            "boot": {"static_url": "/static"}, "csp_nonce": nonce}, status_code=404)
    drives = joined is None or (not follow and access.holds_token(joined, token))
    boot = boot_data(session if joined else None, follow or not drives,
                     token if joined and drives else None, nonce, settings)
    return templates.TemplateResponse(request, "index.html", {"boot": boot, "csp_nonce": nonce})


@router.get("/explain", response_class=HTMLResponse)
def explain(request: Request, settings: SettingsDep) -> HTMLResponse:
    """The concepts the panels link to, each with its figure."""
    templates = Jinja2Templates(directory=settings.frontend_dir / "templates")
    return templates.TemplateResponse(request, "explain.html", {"boot": {"static_url": "/static"}})


@router.get("/api/sessions/{session_id}/follow-qr.svg", tags=["sessions"])
def follow_qr(registry: RegistryDep, settings: SettingsDep, session_id: str) -> Response:
    """A QR code of the session's follow link (read-only, no token) for a room to scan, on
    the server's public address when it has one (a classroom's: the teacher's page may be on
    localhost), else on a name it is served by; never on the request's Host."""
    session = found(registry.get(session_id), {"message": "no such session",
                                               "field": "session_id", "code": "not_found"})
    url = f"{share_url(settings)}/?session={session.id}&follow=1"
    out = io.BytesIO()
    segno.make(url, error="m").save(out, kind="svg", scale=6, border=2, xmldecl=False,
                                    dark="#000", light="#fff")
    return Response(out.getvalue(), media_type="image/svg+xml")


@functools.cache
def preset_config(name: str) -> dict[str, Any]:
    """The full EngineConfig a preset runs on (the form's first values before `init`)."""
    return EngineConfig.from_dict(preset_workload(name).base_config).to_dict()


def boot_data(session_id: str | None, follow: bool, token: str | None, nonce: str,
              settings: Settings) -> dict[str, Any]:
    """`session_id` None: the page creates its own private session (`/ws/sessions/new`).
    `public_url`: the base of followers' links (the room's address, not this page's host;
    null: this page's)."""
    sid = session_id or "new"
    preset = settings.demo_preset
    query = "?follow=1" if follow else (f"?token={token}" if token else "")
    return {
        "session_id": sid, "follow": follow, "ws_path": f"/ws/sessions/{sid}{query}",
        "protocol_version": 1, "presets": list_presets(), "preset": preset,
        "config": preset_config(preset), "fields": config_fields(),
        "upload_url": "/api/traces", "static_url": "/static",
        "uplot_js": "/vendor/uplot/uPlot.esm.js", "uplot_css": "/vendor/uplot/uPlot.min.css",
        "csp_nonce": nonce, "public_url": public_url(settings),
    }


@router.get("/sweep", response_class=HTMLResponse)
def sweep_page(request: Request, settings: SettingsDep) -> HTMLResponse:
    """The Sweep view: a config grid over a preset or an uploaded request trace."""
    nonce = secrets.token_urlsafe(16)
    request.state.csp_nonce = nonce
    # the uploads offered are the visitor's own: the page asks GET /api/traces with its token
    boot = {"presets": list_presets(), "traces_url": "/api/traces",
            "grid_keys": list(GRID_KEYS),
            "slo_metrics": list(METRICS), "static_url": "/static",
            "uplot_js": "/vendor/uplot/uPlot.esm.js", "uplot_css": "/vendor/uplot/uPlot.min.css",
            "entry": "sweep_main.js"}
    templates = Jinja2Templates(directory=settings.frontend_dir / "templates")
    return templates.TemplateResponse(request, "sweep.html", {"boot": boot, "csp_nonce": nonce})
