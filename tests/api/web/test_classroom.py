"""A room's settings: all interfaces, this machine's addresses served, an address advertised;
the public base URL followers' links carry; a bad --public-address said plainly."""

from __future__ import annotations

import pytest

from servescope.api.settings import Settings
from servescope.api.web.addresses import Addresses
from servescope.api.web.classroom import (
    check_public_address,
    classroom_settings,
    public_host,
    public_url,
)

LAN = Addresses({"lo": ["127.0.0.1"], "wlan0": ["192.168.1.20", "2001:db8::7"]}, "wlan0")


def detect() -> Addresses:
    return LAN


def test_a_plain_server_is_left_as_it_is():
    plain = Settings(server_names=("x",))
    assert classroom_settings(plain, detect) is plain
    assert public_url(plain) is None  # links name the address the page was opened by


def test_a_classroom_listens_everywhere_serves_its_addresses_and_advertises_one():
    room = classroom_settings(Settings(classroom=True, server_names=("teacher.lan",)), detect)
    assert room.host == "0.0.0.0"
    assert room.server_names == ("teacher.lan", "127.0.0.1", "192.168.1.20")  # IPv4 listener
    assert room.public_address == "192.168.1.20"
    assert public_url(room) == "http://192.168.1.20:8000"
    assert classroom_settings(room, detect) == room  # idempotent: the CLI and the app both ask


def test_a_given_public_address_and_host_are_kept():
    room = classroom_settings(Settings(classroom=True, public_address="127.0.0.2",
                                       host="127.0.0.2", port=9001), detect)
    assert (room.host, room.public_address) == ("127.0.0.2", "127.0.0.2")
    assert public_url(room) == "http://127.0.0.2:9001"


def test_listening_on_ipv6_serves_the_global_ipv6_addresses():
    room = classroom_settings(Settings(classroom=True, host="::"), detect)
    assert "2001:db8::7" in room.server_names


@pytest.mark.parametrize(("address", "url", "host"), [
    ("Teacher-Laptop.local", "http://teacher-laptop.local:8000", "teacher-laptop.local"),
    ("2001:DB8::7", "http://[2001:db8::7]:8000", "2001:db8::7"),
    ("[fd00::2]", "http://[fd00::2]:8000", "fd00::2"),
    ("https://scope.example.org/", "https://scope.example.org", "scope.example.org"),
    ("http://10.0.0.5:80", "http://10.0.0.5:80", "10.0.0.5"),
])
def test_the_public_url_of_each_kind_of_address(address, url, host):
    settings = Settings(public_address=address)
    assert (public_url(settings), public_host(settings)) == (url, host)


def test_a_public_address_alone_needs_no_classroom():
    assert public_url(Settings(host="0.0.0.0", public_address="10.0.0.5", port=81)) == \
        "http://10.0.0.5:81"
    assert public_host(Settings(host="10.0.0.5")) is None


@pytest.mark.parametrize("bad", ["http://x/path", "ftp://x", "http://u@x", "http://x:99999",
                                 "a b", "x?y", "-bad-.name", "http://x/?q=1", "a" * 300])
def test_a_bad_public_address_is_refused_by_name(bad):
    with pytest.raises(ValueError, match="public address"):
        check_public_address(bad)
    with pytest.raises(ValueError):
        classroom_settings(Settings(classroom=True, public_address=bad), detect)
