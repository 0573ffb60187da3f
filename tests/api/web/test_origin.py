"""Who may drive: served names (the public address among them), foreign origins still refused,
and a refusal's reason in words that say what to start the server with."""

from __future__ import annotations

from servescope.api.settings import Settings
from servescope.api.web.origin import origin_allowed, refusal, served_names

ROOM = Settings(classroom=True, host="0.0.0.0", server_names=("127.0.0.1", "192.168.1.20"),
                public_address="192.168.1.20")


def test_the_public_address_is_a_served_name():
    assert "10.0.0.5" in served_names(Settings(public_address="10.0.0.5"))
    assert "scope.example.org" in served_names(Settings(public_address="https://scope.example.org"))
    assert origin_allowed("http://192.168.1.20:8000", "192.168.1.20:8000", ROOM)
    assert origin_allowed("http://localhost:8000", "localhost:8000", ROOM)


def test_a_page_by_an_unserved_name_is_told_to_start_a_classroom():
    why = refusal("http://192.168.1.20:8000", "192.168.1.20:8000", Settings(host="0.0.0.0"))
    assert why == ("This server does not accept pages opened at http://192.168.1.20:8000 — start "
                   "it with `servescope serve --classroom` (or set "
                   "SERVESCOPE_SERVER_NAMES=192.168.1.20).")


def test_a_classroom_names_its_own_url_to_an_unserved_page():
    why = refusal("http://teacher.local:8000", "teacher.local:8000", ROOM)
    assert why is not None and "open http://192.168.1.20:8000/ instead" in why
    assert "--public-address teacher.local" in why


def test_foreign_and_rebinding_origins_are_still_refused():
    for origin, host in [("http://evil.example", "192.168.1.20:8000"),  # cross-site
                         ("http://evil.example:8000", "evil.example:8000"),  # DNS rebinding
                         ("http://192.168.1.20:9999", "192.168.1.20:8000"),  # another port
                         ("null", "192.168.1.20:8000"), ("file://x", "x")]:
        assert not origin_allowed(origin, host, ROOM), origin
        assert refusal(origin, host, ROOM)
    assert "reached the server as" in refusal("http://evil.example", "192.168.1.20:8000", ROOM)


def test_a_listed_origin_needs_no_served_name():
    listed = Settings(allowed_origins=("https://class.example",))
    assert refusal("https://class.example", "127.0.0.1:8000", listed) is None
