"""This machine's own addresses, found without sending a packet: each interface's IPv4 address
(the SIOCGIFADDR ioctl on a socket that is never connected), its global IPv6 addresses
(/proc/net/if_inet6) and the interface of the default route (/proc/net/route), so that a
classroom server knows which names students may open it by and which one to advertise."""

from __future__ import annotations

import ipaddress
import socket
import struct
from collections.abc import Callable, Iterable
from pathlib import Path

SIOCGIFADDR = 0x8915  # Linux: an interface's IPv4 address, asked of the kernel, not the network
IFNAMSIZ = 16
PROC = Path("/proc/net")


def interface_ipv4(names: Iterable[str]) -> dict[str, str]:
    """{interface: its IPv4 address} for each named interface that has one."""
    try:
        import fcntl
    except ImportError:  # not a Unix: no interface is found, --public-address names one
        return {}
    found: dict[str, str] = {}
    # a datagram socket that is never connected nor sent on: only the ioctl's handle
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for name in names:
            try:
                raw = fcntl.ioctl(s.fileno(), SIOCGIFADDR,
                                  struct.pack("256s", name.encode()[:IFNAMSIZ - 1]))
            except OSError:  # down, or no IPv4 address
                continue
            found[name] = socket.inet_ntoa(raw[20:24])
    return found


def parse_if_inet6(text: str) -> dict[str, list[str]]:
    """{interface: its global IPv6 addresses} from /proc/net/if_inet6 (link-local addresses
    need a zone id a URL cannot carry, loopback is served anyway)."""
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) != 6 or fields[3] != "00":  # scope 00: global
            continue
        try:
            address = ipaddress.IPv6Address(bytes.fromhex(fields[0]))
        except ValueError:
            continue
        found.setdefault(fields[5], []).append(address.compressed)
    return found


def parse_default_route(text: str) -> str | None:
    """The interface of the IPv4 default route in /proc/net/route, if there is one."""
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 2 and fields[1] == "00000000":
            return fields[0]
    return None


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:  # not Linux, or /proc not mounted
        return ""


class Addresses:
    """What `detect()` found: every address (loopback included) and the one to advertise.
    `ipv6`: whether the server listens on IPv6 too (0.0.0.0 does not, :: does)."""

    def __init__(self, by_interface: dict[str, list[str]], default_interface: str | None):
        self.by_interface = by_interface
        self.default_interface = default_interface

    def all(self, ipv6: bool = False) -> list[str]:
        found = (a for addrs in self.by_interface.values() for a in addrs)
        return list(dict.fromkeys(a for a in found if ipv6 or ":" not in a))

    def advertised(self, ipv6: bool = False) -> str:
        """The default route's IPv4 address, else any non-loopback IPv4, else (ipv6) any
        global IPv6, else 127.0.0.1 (a machine with no network serves only itself)."""
        default = self.by_interface.get(self.default_interface or "", [])
        candidates = [*default, *sorted(self.all(ipv6), key=lambda a: ":" in a)]  # IPv4 first
        return next((a for a in candidates if (ipv6 or ":" not in a)
                     and not ipaddress.ip_address(a).is_loopback), "127.0.0.1")


def detect(read: Callable[[Path], str] = _read,
           ipv4: Callable[[Iterable[str]], dict[str, str]] = interface_ipv4) -> Addresses:
    names = [name for _, name in socket.if_nameindex()] if hasattr(socket, "if_nameindex") \
        else []
    by_interface: dict[str, list[str]] = {n: [a] for n, a in ipv4(names).items()}
    for name, addrs in parse_if_inet6(read(PROC / "if_inet6")).items():
        by_interface.setdefault(name, []).extend(addrs)
    return Addresses(by_interface, parse_default_route(read(PROC / "route")))
