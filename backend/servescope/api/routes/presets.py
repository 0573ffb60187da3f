"""Presets, and the model and GPU catalogs the cost model knows."""

from __future__ import annotations

import importlib
from typing import Any

from fastapi import APIRouter

from servescope.api.workloads import list_presets

router = APIRouter(prefix="/api", tags=["catalog"])


@router.get("/presets")
def presets() -> list[dict[str, Any]]:
    return list_presets()


@router.get("/models")
def models() -> list[dict[str, Any]]:
    return _catalog("MODELS")


@router.get("/gpus")
def gpus() -> list[dict[str, Any]]:
    return _catalog("GPUS")


def _catalog(name: str) -> list[dict[str, Any]]:
    """The hardware catalog's entries as plain dicts ([] until the catalog exists)."""
    try:
        module = importlib.import_module("servescope.core.catalog")
    except ImportError:
        return []
    table = getattr(module, name, {})
    items = table.items() if isinstance(table, dict) else enumerate(table)
    return [{"name": str(key), **_plain(value)} for key, value in items]


def _plain(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    if hasattr(value, "__dataclass_fields__"):
        return {k: getattr(value, k) for k in value.__dataclass_fields__}
    return {"value": str(value)}
