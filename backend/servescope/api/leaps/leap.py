"""A leap: a track's records simulated from an engine checkpoint (core/checkpoint.py) instead
of from its first step, so that a seek past what the track has stored is answered as soon as
the scout (api/leaps/scout.py) has run the engine past it. The records and keyframes are the ones
the track's own simulation stores at the same indices (tests/api/leaps/test_leap.py): the stream
state they are packed against is read off the engine, after one recorded step for the last
record."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from servescope.api.records.run_store import Row, RunStore
from servescope.api.records.writer import Writer
from servescope.api.wire.keyframes import keyframe_cost
from servescope.api.wire.serialize import normalize
from servescope.api.wire.stream_state import (
    FINISHED,
    PREEMPTED,
    REJECTED,
    RUNNING,
    WAITING,
    StreamState,
)
from servescope.core.block_pool import block_events
from servescope.core.checkpoint import advance_to, resume, take
from servescope.core.decode_stretch import DecodeStretch
from servescope.core.engine import Engine
from servescope.core.kv_cache_manager import PagedKVCacheManager
from servescope.core.request import RequestStatus
from servescope.core.scheduler.vllm_v1 import VllmV1Scheduler
from servescope.core.scheduler.vllm_v1_async import VllmV1AsyncScheduler

STATUS_CODE = {RequestStatus.WAITING: WAITING, RequestStatus.RUNNING: RUNNING,
          RequestStatus.PREEMPTED: PREEMPTED}


def leaps(engine: Engine) -> bool:
    """Whether a leap can start from this engine's checkpoints: vLLM V1's scheduler (synchronous
    or async), over the paged cache, each request id once (the state is then read off it
    exactly)."""
    return why_no_leap(engine) is None


# why a replay's track has no leaps (a replay has no engine to checkpoint)
REPLAY_NO_LEAP = "a replayed step recording is read record by record and has no checkpoints"


def why_no_leap(engine: Engine) -> str | None:
    """Why a seek past what this engine's track has stored cannot leap (None: it can), in the
    words the page shows beside the scrubber."""
    kv = engine.kv
    if type(engine.scheduler) not in (VllmV1Scheduler, VllmV1AsyncScheduler):
        return (f"the {engine.config.policy} policy is a contrast to vLLM V1's scheduler and has "
                "no checkpoints")
    if not isinstance(kv, PagedKVCacheManager):
        return "this KV cache layout has no checkpoints"
    if not kv.unique_ids:
        return "request ids repeat in this workload, so its engine has no checkpoints"
    return None


def state_at(engine: Engine, requests: Sequence[Mapping[str, Any]],
             last: dict[str, Any]) -> StreamState:
    """The stream state after the engine's last step, whose record is `last`."""
    state = StreamState(requests)
    for done in engine.done_requests:
        rid = done.id
        state.status[rid] = FINISHED
        state.computed[rid] = done.prompt_len + done.output_len - 1
        state.outputs[rid] = done.output_len
        state.cached_tokens[rid] = done.last_cached_tokens
        if done.num_preemptions:
            state.preemptions[rid] = done.num_preemptions
    for rid, _ in engine.rejected:
        state.status[rid] = REJECTED
    for request in engine.scheduler.requests.values():
        rid = request.id
        state.status[rid] = STATUS_CODE[request.status]
        if request.last_cached_tokens >= 0:
            state.computed[rid] = request.num_computed_tokens
            state.cached_tokens[rid] = request.last_cached_tokens
        if request.num_output_tokens:
            state.outputs[rid] = request.num_output_tokens
        if request.num_preemptions:
            state.preemptions[rid] = request.num_preemptions
    state.tables = {rid: list(table) for rid, table in engine.kv.tables.items()}
    pool = engine.kv.pool
    state.cached = {block for block, key in enumerate(pool.block_hash) if key is not None}
    finished = set(last["finished"])
    state.running = [rid for rid in last["running"] if rid not in finished]
    state.waiting = list(last["waiting"])
    state.set_last(last)
    return state


def cached_before_flight(engine: Engine) -> set[int]:
    """The cached blocks before the step in flight was planned. A plan caches the blocks its
    requests' tokens so far fill and evicts the ones it reuses (its events come with its own
    record); a held copy's update would cache those itself instead."""
    pool = engine.kv.pool
    cached = {block for block, key in enumerate(pool.block_hash) if key is not None}
    flight = engine.batch_queue.in_flight if engine.batch_queue is not None else None
    for event in reversed(block_events(flight.events) if flight is not None else ()):
        (cached.difference_update if event.kind == "stored" else cached.update)(event.block_ids)
    return cached


def held_copy(engine: Engine) -> Engine | None:
    """Under async scheduling, a copy of the engine as the records up to its next one leave it
    (None when synchronous: the engine is that once it has stepped). The async loop plans the
    step after a record before that record's update (core/batch_queue.py), so the copy updates
    the step in flight without planning the next."""
    if engine.batch_queue is None:
        return None
    copy = resume(take(engine), engine, engine.arrivals.specs())
    assert copy.batch_queue is not None
    copy.step_with_batch_queue(copy.batch_queue, hold=True)
    return copy


def start_leap(engine: Engine, first: int, requests: Sequence[Mapping[str, Any]],
               store: RunStore, number: int, num_gpu_blocks: int, interval: int,
               on_flush: Callable[[list[Row]], None]) -> Writer:
    """A writer for records `first` onwards of the engine's run (at or before `first`), its
    first keyframe taken (after record first - 1)."""
    advance_to(engine, first - 1)
    held = held_copy(engine)
    record = engine.step()
    assert record is not None, "a leap starts before the run's end"
    settled = held or engine
    last = normalize(record.to_dict())
    state = state_at(settled, requests, last)
    if held is not None:
        state.cached = cached_before_flight(engine)
    preempted = {r.id for r in settled.scheduler.waiting if r.status is RequestStatus.PREEMPTED}
    writer = Writer(state, store, number, num_gpu_blocks, interval,
                    keyframe_cost(len(requests), num_gpu_blocks), on_flush, None, preempted)
    writer.take_keyframe(state.iter)
    return writer


def write_next(engine: Engine, writer: Writer) -> bool:
    """The engine's next step or decode stretch through `writer`; False at the end."""
    n = engine.iter
    item = engine.advance()
    if item is None:
        writer.flush()
        return False
    if isinstance(item, DecodeStretch):
        writer.store_stretch(item, n, item.num_steps)
    else:
        writer.store_record(item, n)
    return True
