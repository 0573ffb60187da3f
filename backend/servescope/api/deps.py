"""FastAPI dependencies: the app's settings, store and session registry (tests override them)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request
from starlette.requests import HTTPConnection

from servescope.api.errors import UploadError
from servescope.api.sessions.registry import Registry
from servescope.api.settings import Settings
from servescope.api.uploads import owner as owners
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


def get_upload_token(conn: HTTPConnection) -> str | None:
    """The `X-Upload-Token` the caller presents (None without one); a malformed one is a 400
    naming the header."""
    try:
        return owners.checked_token(conn.headers.get(owners.HEADER))
    except UploadError as err:
        raise HTTPException(err.status, err.detail) from err


def get_upload_owner(token: Annotated[str | None, Depends(get_upload_token)]) -> str:
    """The caller's owner digest (api/uploads/owner.py): whose uploads it may list and use."""
    return owners.owner_of(token)


SettingsDep = Annotated[Settings, Depends(get_settings)]
UploadTokenDep = Annotated[str | None, Depends(get_upload_token)]
UploadOwnerDep = Annotated[str, Depends(get_upload_owner)]
StoreDep = Annotated[Store, Depends(get_store)]
RegistryDep = Annotated[Registry, Depends(get_registry)]
__all__ = ["Request", "RegistryDep", "SettingsDep", "StoreDep", "UploadOwnerDep",
           "UploadTokenDep"]
