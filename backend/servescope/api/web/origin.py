"""Which pages may drive this server: an Origin is allowed when it is listed in
`allowed_origins`, or when it names the request's own Host under a name the server is served
by (loopback names, --host, `server_names`, the public address); a DNS-rebinding page fails the
second part. A refused page is told why, in words the person who started the server can act on."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

from servescope.api.settings import Settings
from servescope.api.web.classroom import ANY_HOST, public_host, public_url

LOOPBACK = ("localhost", "127.0.0.1", "::1")


def served_names(settings: Settings) -> set[str]:
    names = {*LOOPBACK, *(n.lower().strip("[]") for n in settings.server_names)}
    if settings.host not in ANY_HOST:
        names.add(settings.host.lower().strip("[]"))
    public = public_host(settings)
    if public:
        names.add(public)
    return names


def origin_allowed(origin: str, host: str | None, settings: Settings) -> bool:
    return refusal(origin, host, settings) is None


def refusal(origin: str, host: str | None, settings: Settings) -> str | None:
    """Why a page at `origin`, reaching this server by `host`, may not drive it; None if it may."""
    if origin in settings.allowed_origins:
        return None
    try:
        parts = urlsplit(origin)
        name = (parts.hostname or "").lower()
    except ValueError:
        name, parts = "", None
    if parts is None or parts.scheme not in ("http", "https") or not name:
        return f"{origin[:200]!r} is not a web page's origin."
    if parts.netloc.lower() != (host or "").lower():
        return (f"This page, opened at {origin[:200]}, reached the server as "
                f"{(host or 'no host')[:200]}: "
                "a page must come from the server it talks to (behind a proxy, pass the Host "
                "header on or list the page's origin in SERVESCOPE_ALLOWED_ORIGINS).")
    if name in served_names(settings):
        return None
    return _unserved(origin[:200], name[:200], settings)


def _unserved(origin: str, name: str, settings: Settings) -> str:
    said = f"This server does not accept pages opened at {origin}"
    room = public_url(settings) if settings.classroom else None
    if room is None:
        return (f"{said} — start it with `servescope serve --classroom` "
                f"(or set SERVESCOPE_SERVER_NAMES={name}).")
    return (f"{said} — open {room}/ instead, or start it with "
            f"`servescope serve --classroom --public-address {name}` "
            f"(or set SERVESCOPE_SERVER_NAMES={name}).")


def cross_site(headers: Mapping[str, str]) -> bool:
    """A browser's own word that another site sent this request."""
    return headers.get("sec-fetch-site", "") == "cross-site"
