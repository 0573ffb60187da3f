"""payer_of (who a quota charges) and Shares (a payer's sockets, and what it did in the last
hour), on hand-made headers and a hand-moved clock."""

from __future__ import annotations

from support.server import FakeClock

from servescope.api.uploads.owner import owner_of
from servescope.api.web.clients import HOUR_S, Shares, payer_of


def test_a_payer_is_its_upload_owner_else_its_session_token_else_its_address():
    both = {"x-upload-token": "upload-token-1", "x-session-token": "s1, s2"}
    # charged to the upload token's owner (the digest the store knows it by)
    assert payer_of(both, "10.0.0.7", "ws-token") == "upload:" + owner_of("upload-token-1")
    first = payer_of({"x-session-token": "s1, s2"}, "10.0.0.7")
    assert first.startswith("session:") and first == payer_of({}, "10.0.0.9", "s1")
    assert payer_of({}, "10.0.0.7", "s2") not in (first, "session:s2")
    assert payer_of({}, "10.0.0.7") == "address:10.0.0.7"
    assert payer_of({"x-upload-token": "  "}, None) == "address:unknown"


def test_a_token_never_stands_for_an_address_nor_is_kept_and_a_long_one_is_bounded():
    assert payer_of({"x-upload-token": "10.0.0.7"}, "1.2.3.4") != payer_of({}, "10.0.0.7")
    for header in ("x-upload-token", "x-session-token"):
        payer = payer_of({header: "t" * 100_000}, None)
        assert "tt" not in payer and len(payer) < 100


def test_sockets_are_counted_up_to_the_limit_and_given_back():
    shares = Shares()
    assert [shares.open_socket("a", 2) for _ in range(3)] == [True, True, False]
    assert shares.open_socket("b", 2)  # another client has its own share
    shares.close_socket("a")
    assert shares.open_socket("a", 2) and not shares.open_socket("a", 2)
    for _ in range(2):
        shares.close_socket("a")
    assert "a" not in shares.sockets


def test_an_hourly_share_refuses_with_the_wait_and_frees_an_hour_later():
    clock = FakeClock()
    shares = Shares(clock)
    assert shares.take("upload", "a", 2) == 0.0
    clock.advance(600)
    assert shares.take("upload", "a", 2) == 0.0
    assert shares.take("upload", "a", 2) == HOUR_S - 600  # the first one ages out then
    assert shares.take("sweep", "a", 1) == 0.0  # another kind has its own count
    clock.advance(HOUR_S - 600)
    assert shares.take("upload", "a", 2) == 0.0
