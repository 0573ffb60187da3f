"""Requests: the immutable spec a workload gives, and the mutable state the engine keeps."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from servescope.core.block_pool import BlockHash


@dataclass(frozen=True, slots=True)  # a million of them in a big trace: no __dict__ each
class RequestSpec:
    """One request of a workload.

    `prefix` lists the shared token streams the prompt starts with, as (key, num_tokens)
    segments: two requests whose prompts start with the same segments share those tokens
    exactly (a system prompt, a Mooncake hash id). Every other token is unique to the request.
    `measured` keeps what a recorded benchmark measured for this request (ttft_s, itl_s, ...).
    `spec_accepted` (speculative decoding) is how many drafts the target accepts at each of
    the request's successive verify steps (issue #34's contract; past its end: 0).
    `session_id` names the session or user the request belongs to (a fleet's session router
    keeps one on one replica); None when the workload carries none.
    """

    id: str
    prompt_len: int
    output_len: int
    arrival_step: int | None = None
    arrival_s: float | None = None
    prefix: tuple[tuple[str, int], ...] = ()
    priority: int = 0
    measured: dict[str, object] | None = field(default=None, compare=False, hash=False)
    spec_accepted: tuple[int, ...] | None = None
    session_id: str | None = None


class RequestStatus(enum.Enum):
    WAITING = "waiting"
    RUNNING = "running"
    PREEMPTED = "preempted"
    FINISHED = "finished"
    REJECTED = "rejected"
    # P/D (core/kv_connector.py): blocks allocated, the prompt's KV still crossing the link
    WAITING_FOR_REMOTE_KVS = "waiting_for_remote_kvs"
    FINISHED_ERROR = "finished_error"  # vLLM's status for a failed KV load under policy "fail"


class Request:
    """A request inside the engine: `num_computed_tokens` chases `num_tokens`.

    While running, its counters live in the scheduler's RunningBatch columns (`batch`,
    `slot`: set by the batch); the properties below read and write through to them.
    """

    __slots__ = (
        "spec", "id", "prompt_len", "output_len", "priority", "spec_accepted", "status",
        "_num_computed",
        "_num_output", "_num_placeholders", "num_cached_tokens", "last_cached_tokens",
        "num_preemptions", "num_draft_tokens", "num_verify_steps", "is_prefill_chunk",
        "arrival_index", "block_hashes", "arrival_time", "first_scheduled_time", "token_stretches",
        "step_end_s", "finish_time", "batch", "slot",
    )

    def __init__(self, spec: RequestSpec, arrival_index: int, arrival_time: float,
                 step_end_s: Sequence[float] | None = None) -> None:
        self.spec = spec
        self.id = spec.id
        self.prompt_len = spec.prompt_len
        self.output_len = spec.output_len
        self.priority = spec.priority
        self.spec_accepted = spec.spec_accepted
        self.arrival_index = arrival_index
        self.status = RequestStatus.WAITING
        self._num_computed = 0
        self._num_output = 0
        self._num_placeholders = 0
        self.batch: Any = None  # the RunningBatch holding its counters, while it runs
        self.slot = -1  # its row there
        self.num_cached_tokens = -1  # prefix-cache hit found at first admission; -1 until then
        self.last_cached_tokens = -1  # and at its latest (a resume after a preemption)
        self.num_preemptions = 0
        # speculative decoding: drafts held for the next step (len of vLLM's spec_token_ids),
        # verify steps so far (the index into spec_accepted), and whether the last schedule
        # left a prefill unfinished (vLLM's Request.is_prefill_chunk)
        self.num_draft_tokens = 0
        self.num_verify_steps = 0
        self.is_prefill_chunk = False
        self.block_hashes: list[BlockHash] = []
        self.arrival_time = arrival_time
        self.first_scheduled_time: float | None = None
        self.token_stretches: list[tuple[int, int]] = []  # (first engine iteration, count)
        self.step_end_s = step_end_s if step_end_s is not None else []  # engine's, by iteration
        self.finish_time: float | None = None

    @property
    def num_computed_tokens(self) -> int:
        batch = self.batch
        return self._num_computed if batch is None else int(batch.num_computed[self.slot])

    @num_computed_tokens.setter
    def num_computed_tokens(self, value: int) -> None:
        if self.batch is None:
            self._num_computed = value
        else:
            self.batch.num_computed[self.slot] = value

    @property
    def num_output_placeholders(self) -> int:
        """(Async scheduling) tokens of steps in flight, counted in num_computed_tokens before
        they are sampled (vLLM's num_output_placeholders); always 0 when scheduling is sync."""
        batch = self.batch
        return self._num_placeholders if batch is None else int(batch.num_placeholders[self.slot])

    @num_output_placeholders.setter
    def num_output_placeholders(self, value: int) -> None:
        if self.batch is None:
            self._num_placeholders = value
        else:
            self.batch.num_placeholders[self.slot] = value

    @property
    def num_output_tokens(self) -> int:
        batch = self.batch
        return self._num_output if batch is None else int(batch.num_output[self.slot])

    @property
    def num_tokens(self) -> int:
        return self.prompt_len + self.num_output_tokens

    @property
    def is_finished(self) -> bool:
        return self.num_output_tokens >= self.output_len

    @property
    def all_token_stretches(self) -> list[tuple[int, int]]:
        """Every (first engine iteration, count) run of sampled tokens, the open one included."""
        batch = self.batch
        if batch is not None and batch.stretch_len[self.slot]:
            return [*self.token_stretches,
                    (int(batch.stretch_start[self.slot]), int(batch.stretch_len[self.slot]))]
        return self.token_stretches

    @property
    def token_times(self) -> list[float]:
        """When each output token was sampled (end of its step), from the token stretches."""
        return _token_times(self.step_end_s, self.all_token_stretches)

    def leave_batch(self, num_computed: int, num_output: int, num_placeholders: int) -> None:
        """Its counters as its batch last held them, kept here now that it has left."""
        self._num_computed = num_computed
        self._num_output = num_output
        self._num_placeholders = num_placeholders
        self.batch = None
        self.slot = -1

    def add_token(self, iteration: int) -> None:
        """One sampled token at engine iteration `iteration` (for requests outside a batch)."""
        if self.batch is not None:
            self.batch.sample(self.slot, iteration)
            return
        if self.token_stretches and sum(self.token_stretches[-1]) == iteration:
            first, count = self.token_stretches[-1]
            self.token_stretches[-1] = (first, count + 1)
        else:
            self.token_stretches.append((iteration, 1))
        self._num_output += 1

    def __repr__(self) -> str:
        return f"Request({self.id}, {self.num_computed_tokens}/{self.num_tokens}, {self.status})"


class FinishedRequest:
    """What a request keeps once it has finished: what its metrics read (core/metrics.py), in
    under half of a live Request's memory and without its spec (a big trace has a million)."""

    __slots__ = ("_runs", "arrival_time", "finish_time", "first_scheduled_time", "id",
                 "last_cached_tokens", "num_cached_tokens", "num_preemptions", "output_len",
                 "prompt_len", "step_end_s", "drafts", "accepted")

    def __init__(self, request: Request) -> None:
        self.id = request.id
        self.prompt_len = request.prompt_len
        self.output_len = request.output_len
        self.arrival_time = request.arrival_time
        self.first_scheduled_time = request.first_scheduled_time
        self.finish_time = request.finish_time
        self.num_cached_tokens = request.num_cached_tokens
        self.last_cached_tokens = request.last_cached_tokens
        self.num_preemptions = request.num_preemptions
        self.step_end_s = request.step_end_s
        self._runs = tuple(x for run in request.all_token_stretches for x in run)  # flat pairs
        # speculation: draft tokens and accepted drafts over its applied verifies (the engine
        # sets them from its SpecCounters); None when the run does not speculate
        self.drafts: int | None = None
        self.accepted: int | None = None

    @property
    def token_stretches(self) -> list[tuple[int, int]]:
        """(first engine iteration, count) of each run of sampled tokens."""
        runs = self._runs
        return list(zip(runs[::2], runs[1::2], strict=True))

    @property
    def all_token_stretches(self) -> list[tuple[int, int]]:
        return self.token_stretches

    @property
    def token_times(self) -> list[float]:
        return _token_times(self.step_end_s, self.token_stretches)


def _token_times(ends: Sequence[float], runs: Sequence[tuple[int, int]]) -> list[float]:
    return [ends[i] for first, count in runs for i in range(first, first + count)]
