"""A room's server: the settings `servescope serve --classroom` runs with (all interfaces, this
machine's own addresses served, an address to advertise), and the public base URL that
followers' links and QR codes carry: always from the settings, never from a request's Host."""

from __future__ import annotations

import dataclasses
import ipaddress
import re
from collections.abc import Callable
from urllib.parse import urlsplit

from servescope.api.settings import Settings
from servescope.api.web import addresses

ANY_HOST = ("", "0.0.0.0", "::")
DEFAULT_HOST = Settings.host  # loopback: what a room's server replaces with all interfaces
DNS_NAME = re.compile(r"[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?)*")


def classroom_settings(settings: Settings,
                       detect: Callable[[], addresses.Addresses] = addresses.detect) -> Settings:
    """`settings` as a room's server runs them (unchanged unless `classroom`): listening on all
    interfaces unless a host other than loopback was given, serving this machine's addresses,
    advertising `public_address` or, when none is given, the detected one. Idempotent."""
    if not settings.classroom:
        return settings
    check_public_address(settings.public_address)
    found = detect()
    host = "0.0.0.0" if settings.host == DEFAULT_HOST else settings.host
    ipv6 = host in ("", "::")  # 0.0.0.0 listens on IPv4 only: an IPv6 name would not connect
    names = tuple(dict.fromkeys([*settings.server_names, *found.all(ipv6)]))
    return dataclasses.replace(settings, host=host, server_names=names,
                               public_address=settings.public_address or found.advertised(ipv6))


def check_public_address(text: str) -> None:
    """A host name, an IPv4 or IPv6 address, or a base URL (http[s]://name[:port], nothing
    after it); a ValueError that says which otherwise. "" (none given) passes."""
    if not text:
        return
    if "://" not in text:
        _check_host(text.strip("[]") if text.startswith("[") else text)
        return
    parts = urlsplit(text)
    try:
        _ = parts.port  # a bad port raises here
    except ValueError as err:
        raise ValueError(f"public address {text!r}: {err}") from None
    if parts.scheme not in ("http", "https") or parts.path.strip("/") or parts.query \
            or parts.fragment or "@" in parts.netloc or not parts.hostname:
        raise ValueError(f"public address {text!r}: a base URL is http[s]://name[:port] "
                         "with nothing after it")
    _check_host(parts.hostname)


def _check_host(name: str) -> None:
    try:
        ipaddress.ip_address(name)
        return
    except ValueError:
        pass
    if len(name) > 253 or not DNS_NAME.fullmatch(name.lower()):
        raise ValueError(f"public address {name[:80]!r} is neither a host name nor an IP address")


def public_host(settings: Settings) -> str | None:
    """The host name followers' links name (lower case, IPv6 without brackets), if any."""
    url = public_url(settings)
    return None if url is None else (urlsplit(url).hostname or "").lower()


def public_url(settings: Settings) -> str | None:
    """The base URL followers' links and QR codes carry, without a trailing slash, on
    `settings.port` (a base URL given names its own port); None without a public address:
    links then name the address the page was opened by, as a single machine's server does."""
    address = settings.public_address
    if not address:
        return None
    if "://" in address:
        return address.rstrip("/")
    bare = address.strip("[]")
    if ":" in bare:  # IPv6 goes in brackets in a URL
        bare = f"[{ipaddress.IPv6Address(bare).compressed}]"
    return f"http://{bare.lower()}:{settings.port}"


def share_url(settings: Settings) -> str:
    """The base URL a QR code carries: the public URL, else the first name the server is
    served by (`server_names`, then --host unless it is every interface), else loopback; never
    a request's Host, which its sender chooses."""
    public = public_url(settings)
    if public is not None:
        return public
    listening = [] if settings.host in ANY_HOST else [settings.host]
    name = next(iter([*settings.server_names, *listening]), "127.0.0.1").strip("[]")
    if ":" in name:
        name = f"[{name}]"
    return f"http://{name.lower()}:{settings.port}"
