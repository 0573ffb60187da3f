"""The explorer page (boot data says which session to open) and the health check."""

from __future__ import annotations

import secrets
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from servescope.api.deps import RegistryDep, SettingsDep
from servescope.api.registry import Registry
from servescope.api.store import valid_id
from servescope.core.config import field_schema
from servescope.scenarios.workloads import SYNTHETIC_FIELDS, list_presets

router = APIRouter(tags=["pages"])
@router.get("/api/config/fields")
def config_fields() -> dict[str, list[dict[str, Any]]]:
    """The engine-config and synthetic-workload fields: names, kinds, defaults, bounds, choices
    and help, as EngineConfig and the synthetic workload check them (the page builds and
    validates its forms from this)."""
    return {"config": field_schema(), "synthetic": SYNTHETIC_FIELDS}


@router.get("/healthz")
def healthz(registry: RegistryDep) -> dict[str, Any]:
    return {"ok": True, "sessions": len(registry.sessions)}


@router.get("/", response_class=HTMLResponse)
def index(request: Request, registry: RegistryDep, settings: SettingsDep,
          session: Annotated[str | None, Query(max_length=64)] = None,
          follow: bool = False) -> HTMLResponse:
    if session is not None and not valid_id(session):
        raise HTTPException(404, "no such session")
    nonce = secrets.token_urlsafe(16)
    request.state.csp_nonce = nonce
    boot = boot_data(registry, session, follow, nonce)
    templates = Jinja2Templates(directory=settings.frontend_dir / "templates")
    return templates.TemplateResponse(request, "index.html", {"boot": boot, "csp_nonce": nonce})


def boot_data(registry: Registry, session_id: str | None, follow: bool,
              nonce: str) -> dict[str, Any]:
    sid = session_id or registry.demo_id or "new"
    demo = registry.get(registry.demo_id or "")
    config = demo.built.engines[0]["config"] if demo and demo.built else {}
    return {
        "session_id": sid, "follow": follow,
        "ws_path": f"/ws/sessions/{sid}" + ("?follow=1" if follow else ""),
        "protocol_version": 1, "presets": list_presets(), "preset": "demo",
        "config": config, "fields": config_fields(),
        "upload_url": "/api/traces", "static_url": "/static",
        "uplot_js": "/vendor/uplot/uPlot.esm.js", "uplot_css": "/vendor/uplot/uPlot.min.css",
        "csp_nonce": nonce,
    }
