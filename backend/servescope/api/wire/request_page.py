"""`GET /api/sessions/{id}/requests`'s answer: a page of the session's request list."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class RequestInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    prompt_len: int
    output_len: int
    arrival_s: float | None = None
    arrival_step: int | None = None


class RequestPage(BaseModel):
    """`GET /api/sessions/{id}/requests`: requests offset.. of the session's list (init's order,
    which packed records and keyframes index), and how many there are in all."""

    model_config = ConfigDict(extra="forbid")
    total: int
    offset: int
    requests: list[RequestInfo]
