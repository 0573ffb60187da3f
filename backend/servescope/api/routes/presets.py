"""Presets, and the model and GPU catalogs the cost model knows (the names `model` and `gpu`
take: a model's `name` is its Hugging Face id, a GPU's `key` its short name)."""

from __future__ import annotations

import dataclasses
from typing import Any

from fastapi import APIRouter

from servescope.core import catalog
from servescope.scenarios.workloads import list_presets

router = APIRouter(prefix="/api", tags=["catalog"])


@router.get("/presets")
def presets() -> list[dict[str, Any]]:
    return list_presets()


@router.get("/models")
def models() -> list[dict[str, Any]]:
    """Every catalog model's geometry, as ModelSpec names it."""
    return [dataclasses.asdict(spec) for spec in catalog.MODELS.values()]


@router.get("/gpus")
def gpus() -> list[dict[str, Any]]:
    """Every catalog GPU's datasheet figures, as GpuSpec names them (`name`: the long name)."""
    return [dataclasses.asdict(spec) for spec in catalog.GPUS.values()]
