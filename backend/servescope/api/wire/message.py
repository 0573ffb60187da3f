"""The base of every protocol v1 message (api/wire/protocol.py, api/wire/fleet.py)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: str  # each message narrows it to its own name; declared here so that it goes first
    v: Literal[1] = 1
