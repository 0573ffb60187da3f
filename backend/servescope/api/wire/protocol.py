"""Wire protocol v1 as pydantic models: every server and client message (see docs/protocol.md).
The server sends what these models serialize to (api/wire/text.py) and validates what clients
send against them."""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator, with_config
from typing_extensions import TypedDict  # pydantic needs this one before Python 3.12

from servescope.api.wire.engine_info import EngineInfo, TraceInfo
from servescope.api.wire.fleet import FleetFrame, ViewReplica
from servescope.api.wire.message import Message
from servescope.api.wire.position import Clock, Position

Index = int | str  # a request index into the session's request list (GET .../requests), else the id
Role = Literal["driver", "follower"]  # who may drive (api/sessions/access.py)
RunSource = Literal["simulated", "replayed", "live"]  # live: api/sessions/live.py


# --- server to client -----------------------------------------------------------------------


class Init(Message):
    type: Literal["init"] = "init"
    session_id: str
    role: Role
    token: str | None = None  # the driver token, sent to drivers only (api/sessions/access.py)
    source: RunSource
    preset: str | None
    config: dict[str, Any]
    num_gpu_blocks: int
    block_size: int
    engines: list[EngineInfo] = Field(min_length=1, max_length=4)
    num_requests: int = Field(ge=0)  # every engine's; the list: GET .../requests
    num_records: int | None
    keyframe_interval: int
    max_fps: int
    playing: bool
    speed: float
    trace: TraceInfo | None = None


class PackedRecord(BaseModel):
    """One StepRecord packed against the stream state; absent keys are predicted."""

    model_config = ConfigDict(extra="forbid")
    i: int  # iter
    t: float  # time_s
    ms: float  # step_time_ms
    nf: int  # num_free_blocks
    s: int | None = None  # step
    a: list[Index] | None = None  # arrivals
    nw: list[Index] | None = None  # new
    rs: list[Index] | None = None  # resumed
    pr: list[Index] | None = None  # preempted
    f: list[Index] | None = None  # finished
    rl: list[Index] | None = None  # released (absent: the finished ones)
    rj: list[tuple[Index, str]] | None = None  # rejected
    sc: list[Index] | None = None  # scheduled ids
    sn: list[int] | None = None  # [pos, n, ...] exceptions
    ss: list[int] | None = None  # [pos, start, ...] exceptions
    sm: list[int] | None = None  # positions whose `sampled` flips the prediction
    sk: list[int] | None = None  # positions whose `kind` flips the prediction
    sd: list[int] | None = None  # [pos, drafts, ...] exceptions; present: entries carry drafts
    sa: list[int] | None = None  # `accepted` of each entry with drafts, in order
    sz: list[int] | None = None  # [pos, accepted, ...] of entries without drafts (else 0)
    nb: list[Index] | None = None  # new_blocks, flat [index, count, block...]
    fb: list[int] | None = None  # freed_blocks
    # kv_events; an eviction (one block removed by no request) as the block id alone
    ke: list[tuple[Literal[0, 1], list[int], Index | None] | int] | None = None
    ct: list[Index] | None = None  # num_cached_tokens, flat [index, n, ...]
    rn: list[Index] | None = None  # running
    wt: list[Index] | None = None  # waiting
    wk: list[Index] | None = None  # waiting_for_kv (P/D decode side: remote KV in flight)
    ka: list[Index] | None = None  # kv_arrived (P/D decode side: its remote KV came)
    nu: int | None = None  # num_usable_blocks
    ku: float | None = None  # kv_usage
    tb: int | None = None  # token_budget
    mx: int | None = None  # max_num_seqs
    kw: dict[str, int] | None = None  # kv_waste
    kd: list[int | None] | None = None  # kv_waste's changes by position (None: unchanged)


class Step(Message):
    type: Literal["step"] = "step"
    engine: int = Field(ge=0, le=3)
    records: list[PackedRecord] = Field(min_length=1)  # sent as Raw: the stored packed texts


@with_config(ConfigDict(extra="forbid"))
class Repeats(TypedDict):
    """A column as repeats, [value, count, value, count, ...] (api/wire/compact.py); protocol
    v1 names the key `runs`."""

    runs: list[Any]


@with_config(ConfigDict(extra="forbid"))
class Ranges(TypedDict):
    """Block ids as [first, count, first, count, ...]: first, first + 1, ..."""

    ranges: list[int]


class Keyframe(Message):
    type: Literal["keyframe"] = "keyframe"
    engine: int = Field(ge=0, le=3)
    iter: int = Field(ge=-1)
    step: int
    time_s: float
    status: list[int] | Repeats
    num_computed_tokens: list[int] | Repeats
    num_output_tokens: list[int] | Repeats
    num_cached_tokens: list[int] | Repeats
    num_preemptions: list[int] | Repeats
    tables: list[tuple[Index, list[int] | Ranges]]
    block_owner: list[Index | None] | Repeats
    block_ref_count: list[int] | Repeats
    cached_blocks: list[int] | Ranges
    running: list[Index]
    waiting: list[Index]
    record: dict[str, Any] | None


class Status(Message):
    type: Literal["status"] = "status"
    playing: bool
    speed: float
    iters: list[int]
    time_s: float
    done: bool


class Progress(Message):
    """Each engine's background simulation: its last stored record, that record's time, whether
    it has ended, and why it stopped early (None: it did not); and the last record a seek can
    reach now, with the simulated time it ends at: past `computed` where a scout has run the
    engine ahead (api/leaps/scout.py), so that a seek there leaps from a checkpoint."""
    type: Literal["progress"] = "progress"
    computed: list[int] = Field(min_length=1, max_length=4)
    time_s: list[float]
    done: list[bool]
    errors: list[str | None]
    reach: list[int]
    reach_s: list[float]
    # per engine: why a seek past `computed` waits for the simulation (a long run that cannot
    # leap: a replayed recording, a contrast policy), else None
    no_leap: list[str | None] = []


class Done(Message):
    type: Literal["done"] = "done"
    engine: int = Field(ge=0, le=3)
    summary: dict[str, Any]
    num_records: int
    error: str | None = None  # the background simulation stopped early, and why


class LessonNote(Message):
    """The driver's lesson and tour note as its page shows it (a `lesson` from the driver),
    relayed to every viewer so that followers read what the room is told: sent after `init`
    when there is one, and whenever the driver's changes."""
    type: Literal["lesson"] = "lesson"
    note: str | None  # null: no note shown
    anchor: str | None  # the explainer (/explain#anchor) the note links, or null
    on: bool  # lesson playback (or the tour) is stepping the run
    tour: bool  # the guided tour is under way


ErrorCode = Literal["bad_message", "config", "workload", "read_only", "limit", "not_found", "idle",
                    "storage", "storage_full", "too_large", "busy",
                    "memory"]

ERROR_CODES: tuple[ErrorCode, ...] = get_args(ErrorCode)


def error_code(code: str) -> ErrorCode:
    """A SessionError's code as an error message's: its own where the protocol has it (some are
    REST's alone, as `format`), else bad_message."""
    return next((known for known in ERROR_CODES if known == code), "bad_message")


class Error(Message):
    type: Literal["error"] = "error"
    message: str
    field: str | None = None
    code: ErrorCode = "bad_message"


ServerMessage = Annotated[Init | Keyframe | Step | Status | Progress | Done | LessonNote | Error
                          | FleetFrame, Field(discriminator="type")]
SERVER = TypeAdapter(ServerMessage)

# --- client to server -----------------------------------------------------------------------


SOURCES = ("preset", "trace", "synthetic", "requests", "scenario")


class WorkloadSpec(BaseModel):
    """What a configure asks to run, one source of: a preset, an uploaded trace, a synthetic
    generator, inline requests or a saved scenario; api/sessions/build.py resolves it into a
    scenarios Workload (a config and its request specs)."""

    model_config = ConfigDict(extra="forbid")
    preset: str | None = Field(default=None, max_length=100)
    trace: str | None = Field(default=None, max_length=100)
    synthetic: dict[str, Any] | None = None
    requests: list[dict[str, Any]] | None = None
    scenario: str | None = Field(default=None, max_length=100)
    # whose upload `trace` is: the token POST /api/traces answered (api/uploads/owner.py)
    upload_token: str | None = Field(default=None, min_length=16, max_length=64,
                                     pattern=r"^[A-Za-z0-9_-]+$")

    @model_validator(mode="after")
    def _one_source(self) -> WorkloadSpec:
        given = [k for k in SOURCES if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of preset, trace, synthetic, requests, scenario")
        return self


Label = Annotated[str, Field(min_length=1, max_length=120)]
NOTE_CHARS = 2000


class Configure(Message):
    type: Literal["configure"]
    config: dict[str, Any] | None = None
    configs: list[dict[str, Any]] | None = Field(default=None, min_length=2, max_length=4)
    workload: WorkloadSpec | None = None
    labels: list[Label] | None = Field(default=None, min_length=1, max_length=4)  # engines' names

    @model_validator(mode="after")
    def _not_both(self) -> Configure:
        if self.config is not None and self.configs is not None:
            raise ValueError("give config or configs, not both")
        num_configs = 1 if self.configs is None else len(self.configs)
        if self.labels is not None and len(self.labels) != num_configs:
            raise ValueError("give one label per config")
        return self


class Play(Message):
    type: Literal["play"]
    speed: float = Field(default=1.0, ge=0.01, le=1000.0)


class Pause(Message):
    type: Literal["pause"]


class StepCmd(Message):
    type: Literal["step"]
    n: int = Field(default=1, ge=1, le=100_000)


class Seek(Message):
    type: Literal["seek"]
    step: int | None = Field(default=None, ge=0)
    iter: int | None = Field(default=None, ge=-1)
    time_s: float | None = Field(default=None, ge=0.0, allow_inf_nan=False)

    @model_validator(mode="after")
    def _exactly_one(self) -> Seek:
        if sum(x is not None for x in (self.step, self.iter, self.time_s)) != 1:
            raise ValueError("give exactly one of step, iter, time_s")
        return self

    def position(self) -> Position:
        """The record the seek names, on the clock it names it by."""
        if self.time_s is not None:
            return Position(Clock.TIME, self.time_s)
        if self.iter is not None:
            return Position(Clock.ITER, self.iter)
        return Position(Clock.STEP, self.step or 0)


class Reset(Message):
    type: Literal["reset"]


class Lesson(Message):
    """The driver's page's lesson note, for the session to relay to its followers."""
    type: Literal["lesson"]
    note: str | None = Field(default=None, max_length=NOTE_CHARS)
    anchor: str | None = Field(default=None, pattern=r"^[a-z0-9-]{1,64}$")
    on: bool = False
    tour: bool = False


ClientMessage = Annotated[Configure | Play | Pause | StepCmd | Seek | Reset | Lesson
                          | ViewReplica, Field(discriminator="type")]
CLIENT = TypeAdapter(ClientMessage)
