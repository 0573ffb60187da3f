"""Whose an upload is: the browser or client that made it, known by its upload token. The first
upload without a token is answered with a new one; the client sends it back with every later
upload and use (REST: the `X-Upload-Token` header, as sessions take `X-Session-Token`; a
configure: `upload_token` beside `trace` in its workload). The store keeps only a digest of
the token, its `owner` (`owner_of`), which per-client quotas also charge an upload token's
client by (api/web/clients.py's `payer_of`)."""

from __future__ import annotations

import hashlib
import secrets

from servescope.api.errors import UploadError

HEADER = "X-Upload-Token"


def new_token() -> str:
    """128 random bits, URL-safe (the same strength as an upload's id)."""
    return secrets.token_urlsafe(16)


def valid_token(text: str) -> bool:
    return 16 <= len(text) <= 64 and all(c.isalnum() or c in "-_" for c in text)


def owner_of(token: str | None) -> str:
    """The owner an upload token names, as the store and per-client quotas know it: a digest,
    so neither ever holds a token that grants access. No token: "", which owns nothing."""
    if not token:
        return ""
    return hashlib.sha256(f"servescope-upload:{token}".encode()).hexdigest()


def checked_token(token: str | None, field: str = HEADER) -> str | None:
    """The token as given (None when absent or blank); a malformed one is a 400 naming
    `field`."""
    if token is None or not token.strip():
        return None
    token = token.strip()
    if not valid_token(token):
        raise UploadError(400, "not an upload token (16-64 letters, digits, - or _)", line=0,
                          field=field)
    return token
