"""Requests: the immutable spec a workload gives, and the mutable state the engine keeps."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


@dataclass(frozen=True)
class RequestSpec:
    """One request of a workload.

    `prefix` lists the shared token streams the prompt starts with, as (key, num_tokens)
    segments: two requests whose prompts start with the same segments share those tokens
    exactly (a system prompt, a Mooncake hash id). Every other token is unique to the request.
    `measured` keeps what a recorded benchmark measured for this request (ttft_s, itl_s, ...).
    """

    id: str
    prompt_len: int
    output_len: int
    arrival_step: int | None = None
    arrival_s: float | None = None
    prefix: tuple[tuple[str, int], ...] = ()
    priority: int = 0
    measured: dict[str, object] | None = field(default=None, compare=False, hash=False)


class RequestStatus(enum.Enum):
    WAITING = "waiting"
    RUNNING = "running"
    PREEMPTED = "preempted"
    FINISHED = "finished"
    REJECTED = "rejected"


class Request:
    """A request inside the engine: `num_computed_tokens` chases `num_tokens`."""

    __slots__ = (
        "spec", "id", "prompt_len", "output_len", "priority", "status", "num_computed_tokens",
        "num_output_tokens", "num_cached_tokens", "num_preemptions", "arrival_index",
        "block_hashes", "arrival_time", "first_scheduled_time", "token_times", "finish_time",
    )

    def __init__(self, spec: RequestSpec, arrival_index: int, arrival_time: float) -> None:
        self.spec = spec
        self.id = spec.id
        self.prompt_len = spec.prompt_len
        self.output_len = spec.output_len
        self.priority = spec.priority
        self.arrival_index = arrival_index
        self.status = RequestStatus.WAITING
        self.num_computed_tokens = 0
        self.num_output_tokens = 0
        self.num_cached_tokens = -1  # prefix-cache hit found at first admission; -1 until then
        self.num_preemptions = 0
        self.block_hashes: list[int] = []
        self.arrival_time = arrival_time
        self.first_scheduled_time: float | None = None
        self.token_times: list[float] = []
        self.finish_time: float | None = None

    @property
    def num_tokens(self) -> int:
        return self.prompt_len + self.num_output_tokens

    @property
    def is_finished(self) -> bool:
        return self.num_output_tokens >= self.output_len

    def __repr__(self) -> str:
        return f"Request({self.id}, {self.num_computed_tokens}/{self.num_tokens}, {self.status})"
