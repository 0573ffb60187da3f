"""The one settings object: defaults, SERVESCOPE_* variables, then overrides."""

from __future__ import annotations

import pytest

from servescope.api.settings import Settings


def test_the_classroom_settings_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("SERVESCOPE_CLASSROOM", "1")
    monkeypatch.setenv("SERVESCOPE_PUBLIC_ADDRESS", "192.168.1.20")
    monkeypatch.setenv("SERVESCOPE_SERVER_NAMES", "a.lan, b.lan")
    s = Settings.from_env()
    assert (s.classroom, s.public_address, s.server_names) == (True, "192.168.1.20",
                                                                ("a.lan", "b.lan"))


@pytest.mark.parametrize(("raw", "value"), [("true", True), ("ON", True), ("yes", True),
                                            ("0", False), ("", False), ("false", False)])
def test_a_flag_reads_the_usual_words(monkeypatch, raw, value):
    monkeypatch.setenv("SERVESCOPE_CLASSROOM", raw)
    assert Settings.from_env().classroom is value


def test_overrides_beat_the_environment_and_none_keeps_it(monkeypatch):
    monkeypatch.setenv("SERVESCOPE_PUBLIC_ADDRESS", "10.0.0.1")
    assert Settings.from_env(public_address="10.0.0.2").public_address == "10.0.0.2"
    assert Settings.from_env(public_address=None, classroom=None).public_address == "10.0.0.1"
    assert Settings().classroom is False and Settings().public_address == ""
