"""`servescope serve`: --classroom listens on all interfaces and prints the URL students open;
--help documents the flags; a bad --public-address is a one-line error."""

from __future__ import annotations

import sys

import pytest
import uvicorn

from servescope.cli import main


@pytest.fixture
def started(monkeypatch):
    """What uvicorn would have been started with (nothing is served)."""
    calls: list[dict] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: calls.append({"app": app, **kw}))
    monkeypatch.setattr(sys, "setswitchinterval", lambda s: None)
    for name in ("HOST", "PORT", "CLASSROOM", "PUBLIC_ADDRESS", "SERVER_NAMES"):
        monkeypatch.delenv(f"SERVESCOPE_{name}", raising=False)
    return calls


def test_classroom_listens_everywhere_and_prints_the_students_url(started, capsys, tmp_path):
    assert main(["serve", "--classroom", "--public-address", "127.0.0.2", "--port", "8123",
                 "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "students open: http://127.0.0.2:8123/" in out
    (call,) = started
    assert (call["host"], call["port"]) == ("0.0.0.0", 8123)
    settings = call["app"].state.settings
    assert settings.classroom and settings.public_address == "127.0.0.2"
    assert "127.0.0.1" in settings.server_names  # this machine's own addresses are served


def test_without_classroom_nothing_changes(started, capsys, tmp_path):
    assert main(["serve", "--data-dir", str(tmp_path)]) == 0
    assert "on http://127.0.0.1:8000/" in capsys.readouterr().out
    assert started[0]["host"] == "127.0.0.1"
    assert started[0]["app"].state.settings.server_names == ()


def test_all_interfaces_without_classroom_points_to_it(started, capsys, tmp_path):
    main(["serve", "--host", "0.0.0.0", "--data-dir", str(tmp_path)])
    assert "network address are refused; --classroom accepts them" in capsys.readouterr().out


def test_a_bad_public_address_is_a_one_line_error(started, capsys):
    assert main(["serve", "--classroom", "--public-address", "http://x/path"]) == 2
    assert "public address 'http://x/path'" in capsys.readouterr().err
    assert not started


def test_help_documents_the_classroom_flags(capsys):
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for words in ("--classroom", "--public-address ADDR", "listen on all interfaces",
                  "the URL students open", "make classroom"):
        assert words in text, words
