"""Which pages may drive this server: an Origin is allowed when it is listed in
`allowed_origins`, or when it names the request's own Host under a name the server is served
by (loopback names, --host, `server_names`); a DNS-rebinding page fails the second part."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

from servescope.api.settings import Settings

LOOPBACK = ("localhost", "127.0.0.1", "::1")
ANY_HOST = ("", "0.0.0.0", "::")


def served_names(settings: Settings) -> set[str]:
    names = {*LOOPBACK, *(n.lower() for n in settings.server_names)}
    if settings.host not in ANY_HOST:
        names.add(settings.host.lower().strip("[]"))
    return names


def origin_allowed(origin: str, host: str | None, settings: Settings) -> bool:
    if origin in settings.allowed_origins:
        return True
    try:
        parts = urlsplit(origin)
        name = (parts.hostname or "").lower()
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and parts.netloc.lower() == (host or "").lower() \
        and name in served_names(settings)


def cross_site(headers: Mapping[str, str]) -> bool:
    """A browser's own word that another site sent this request."""
    return headers.get("sec-fetch-site", "") == "cross-site"
