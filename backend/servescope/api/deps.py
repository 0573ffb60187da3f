"""FastAPI dependencies: the app's settings, store and session registry (tests override them)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from starlette.requests import HTTPConnection

from servescope.api.sessions.registry import Registry
from servescope.api.settings import Settings
from servescope.api.uploads.store import Store


def get_settings(conn: HTTPConnection) -> Settings:
    settings: Settings = conn.app.state.settings
    return settings


def get_store(conn: HTTPConnection) -> Store:
    store: Store = conn.app.state.store
    return store


def get_registry(conn: HTTPConnection) -> Registry:
    registry: Registry = conn.app.state.registry
    return registry


SettingsDep = Annotated[Settings, Depends(get_settings)]
StoreDep = Annotated[Store, Depends(get_store)]
RegistryDep = Annotated[Registry, Depends(get_registry)]
__all__ = ["Request", "RegistryDep", "SettingsDep", "StoreDep"]
