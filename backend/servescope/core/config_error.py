"""The error a bad config value raises (core/config.py re-exports it)."""

from __future__ import annotations


class ConfigError(ValueError):
    """A config value out of range; `field` names the offending key."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
