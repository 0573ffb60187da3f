"""This machine's addresses: parsed from /proc text, chosen for advertising, and found without a
packet sent (the detecting socket is never connected, sent on or bound)."""

from __future__ import annotations

import socket

from servescope.api.web import addresses
from servescope.api.web.addresses import Addresses, parse_default_route, parse_if_inet6

IF_INET6 = """\
00000000000000000000000000000001 01 80 10 80       lo
fe8000000000000000fc00fffe000001 04 40 20 80     eth0
fd000000000000000000000000000002 04 40 00 82     eth0
20010db8000000000000000000000007 05 40 00 80    wlan0
"""
ROUTE = """\
Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
docker0\t000011AC\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0
wlan0\t00000000\t0101A8C0\t0003\t0\t0\t600\t00000000\t0\t0\t0
"""


def test_global_ipv6_addresses_by_interface_without_loopback_or_link_local():
    assert parse_if_inet6(IF_INET6) == {"eth0": ["fd00::2"], "wlan0": ["2001:db8::7"]}
    assert parse_if_inet6("garbage\nzz 01 80 00 80 lo\n") == {}


def test_the_default_routes_interface():
    assert parse_default_route(ROUTE) == "wlan0"
    assert parse_default_route(ROUTE.splitlines()[0]) is None
    assert parse_default_route("") is None


def test_the_advertised_address_is_the_default_routes_ipv4():
    found = Addresses({"lo": ["127.0.0.1"], "docker0": ["172.17.0.1"],
                       "wlan0": ["192.168.1.20", "2001:db8::7"]}, "wlan0")
    assert found.advertised() == "192.168.1.20"
    assert found.all() == ["127.0.0.1", "172.17.0.1", "192.168.1.20"]
    assert found.all(ipv6=True)[-1] == "2001:db8::7"


def test_without_a_default_route_any_ipv4_then_ipv6_then_loopback():
    assert Addresses({"lo": ["127.0.0.1"], "eth1": ["10.1.2.3"]}, None).advertised() == "10.1.2.3"
    only6 = Addresses({"lo": ["127.0.0.1"], "eth0": ["fd00::2"]}, "eth0")
    assert only6.advertised() == "127.0.0.1"  # 0.0.0.0 would not answer on it
    assert only6.advertised(ipv6=True) == "fd00::2"
    assert Addresses({"lo": ["127.0.0.1"]}, None).advertised() == "127.0.0.1"


def test_detect_combines_the_ioctl_and_proc(monkeypatch):
    monkeypatch.setattr(socket, "if_nameindex", lambda: [(1, "lo"), (2, "wlan0")])
    texts = {"if_inet6": IF_INET6, "route": ROUTE}
    found = addresses.detect(read=lambda path: texts[path.name],
                             ipv4=lambda names: {"lo": "127.0.0.1", "wlan0": "192.168.1.20"})
    assert found.by_interface["wlan0"] == ["192.168.1.20", "2001:db8::7"]
    assert found.advertised() == "192.168.1.20"


class Silent(socket.socket):
    """A socket that fails the test if it would send anything anywhere."""

    def connect(self, *a, **k):
        raise AssertionError("detection connected a socket")

    def sendto(self, *a, **k):
        raise AssertionError("detection sent a datagram")

    def send(self, *a, **k):
        raise AssertionError("detection sent on a socket")

    def bind(self, *a, **k):
        raise AssertionError("detection bound a socket")


def test_detecting_this_machine_sends_nothing_and_finds_loopback(monkeypatch):
    monkeypatch.setattr(socket, "socket", Silent)
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: (_ for _ in ()).throw(
        AssertionError("detection asked a resolver")))
    found = addresses.detect()
    assert "127.0.0.1" in found.all()
    assert found.advertised()  # whatever this machine has, something to print
