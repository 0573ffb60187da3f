"""Which pages may drive this server: an Origin is allowed when it is listed in
`allowed_origins`, or when it names the request's own Host under a name the server is served
by (loopback names, --host, `server_names`, the public address); a DNS-rebinding page fails the
second part. Every request's Host must be one of those names too (`host_refusal`), reads
included. A refused page is told why, in words the person who started the server can act on."""

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


MAX_HOST_CHARS = 300  # a DNS name's 253, brackets, a port: longer is no host this server has


def host_refusal(host: str | None, settings: Settings) -> str | None:
    """Why a request that names `host` (its Host header) is not for this server; None if it
    is: a name it is served by (any port), or a listed origin's. No Host at all (HTTP/1.0, a
    script) passes: a browser, which DNS rebinding drives, always sends one."""
    if host is None:
        return None
    name = host_name(host)
    if name and (name in served_names(settings) or name in _origin_names(settings)):
        return None
    return _unserved(f"http://{ascii(host[:80])[1:-1]}", ascii(name[:80])[1:-1] or "NAME",
                     settings)


def host_name(host: str) -> str:
    """The name in a Host header (lower case, IPv6 without brackets); "" when it has none."""
    if len(host) > MAX_HOST_CHARS:
        return ""
    try:
        return (urlsplit(f"//{host}").hostname or "").lower()
    except ValueError:  # a bad port or bracket
        return ""


def _origin_names(settings: Settings) -> set[str]:
    return {host_name(urlsplit(o).netloc) for o in settings.allowed_origins} - {""}


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
