"""The live engine: one Engine whose simulated clock follows wall time (times `time_scale`).

A request joins at its wall-clock arrival. The engine runs each step once wall time reaches the
step's start (the arrivals' gate, core/arrivals.py, stands at "now", so no step is planned before
the requests that arrive before it), and its tokens go to their streams when wall time reaches
the step's end: the engine is computed at most one step ahead of what clients see. A stream's
lag is how late, in wall seconds, its tokens go out (its generator resumes to send them) after
their step ended: `lag_s` is the largest of the latest step's, `lags` every one's histogram (a
scrape between bursts still sees them).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np

from servescope.api.openai.latency import BucketCounts, Latencies
from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.records import StepRecord
from servescope.core.request import RequestSpec

# an engine made on no request would take the step clock (core/engine.py): one stand-in
# request on the time clock, dropped before anything runs (as core/fleet.py makes its replicas)
TIME_CLOCK_STAND_IN = RequestSpec("<live>", 1, 1, arrival_s=0.0)
# the newest step records kept for a viewer: about ten minutes of 30 ms steps
RECORDS_KEPT = 20_000
# the lag histogram's bounds, wall seconds (ours): around a step (the placeholder cost model's
# is 10 ms and up, core/step_time.py) and its multiples, out to seconds behind
LAG_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5,
               1.0, 2.5, 5.0, 10.0)


class TokenEvent(NamedTuple):
    """What a stream hears: `num_new` tokens (of `num_tokens` so far); `finish_reason` when it
    ends ("length", "stop", or "abort" when the server shuts down)."""

    num_new: int
    num_tokens: int
    finish_reason: str | None


@dataclass(eq=False)
class Stream:
    spec: RequestSpec
    arrival_s: float  # the spec's (a live request arrives when it is submitted)
    stop_reason: str  # its finish_reason when the engine finishes it: "length" or "stop"
    num_tokens: int = 0
    finish_reason: str | None = None
    last_token_s: float | None = None  # the simulated end of the step that gave its last tokens
    wake: asyncio.Event = field(default_factory=asyncio.Event)


class LiveEngine:
    def __init__(self, config: EngineConfig, time_scale: float = 1.0,
                 wall: Callable[[], float] = time.monotonic) -> None:
        self.engine = Engine(config, [TIME_CLOCK_STAND_IN], fast_forward=False)
        self.engine.arrivals.pending.clear()
        self.config = self.engine.config  # its blocks derived from model and GPU
        self.time_scale = time_scale
        self.wall = wall
        self.wall_start = wall()
        self.records: deque[StepRecord] = deque(maxlen=RECORDS_KEPT)
        self.streams: dict[str, Stream] = {}
        self.aborted: list[tuple[str, float]] = []  # (request id, simulated time)
        self.aborting: set[str] = set()  # aborts waiting for their step in flight to update
        # aborted out of the scheduler since the last record: the next record finishes and
        # releases them, as vLLM's next SchedulerOutput lists them in finished_req_ids
        # (Scheduler.finish_requests -> _free_request)
        self.unrecorded: list[str] = []
        self.outbox: deque[tuple[float, list[tuple[Stream, int, bool]]]] = deque()
        self.lag_s = 0.0
        self.lags = BucketCounts(LAG_BUCKETS)
        self.num_prompt_tokens = self.num_generation_tokens = 0
        self.num_finished: dict[str, int] = {}
        self.latencies = Latencies()  # TTFT, ITL, e2e as vLLM observes them (latency.py)
        self.closed = False
        self.wakeup = asyncio.Event()
        # each hears every record as it is made, then None at close (the explorer's live
        # session: api/records/live_feed.py)
        self.listeners: list[Callable[[StepRecord | None], None]] = []

    def now_s(self) -> float:
        """Simulated time now: wall seconds since start, times the time scale."""
        return (self.wall() - self.wall_start) * self.time_scale

    def submit(self, spec: RequestSpec, stop_reason: str = "length",
               ) -> AsyncIterator[TokenEvent]:
        """Enter `spec` (its id new, its lengths checked) arriving now: its token events."""
        assert spec.id not in self.streams, "the caller refuses an id in use"
        arrival_s = self.now_s()
        spec = RequestSpec(spec.id, spec.prompt_len, spec.output_len, arrival_s=arrival_s)
        stream = Stream(spec, arrival_s, stop_reason)
        if self.closed:
            stream.finish_reason = "abort"
        else:
            self.streams[spec.id] = stream
            self.engine.add_request(spec)
            self.wakeup.set()
        return self._events(stream)

    async def _events(self, stream: Stream) -> AsyncIterator[TokenEvent]:
        seen = 0
        try:
            while True:
                if stream.num_tokens == seen and stream.finish_reason is None:
                    await stream.wake.wait()  # close() wakes every stream
                    stream.wake.clear()
                count, reason = stream.num_tokens, stream.finish_reason
                if count > seen:
                    self._sent(stream.last_token_s)
                if count > seen or reason is not None:
                    yield TokenEvent(count - seen, count, reason)
                    seen = count
                if reason is not None:
                    return
        finally:
            if stream.finish_reason is None:
                self.abort(stream.spec.id)

    def _sent(self, step_end_s: float | None) -> None:
        """A stream sends tokens of the step that ended at `step_end_s` (simulated): its lag."""
        if step_end_s is None:
            return
        lag = (self.now_s() - step_end_s) / self.time_scale
        self.lags.observe(lag)
        self.lag_s = max(self.lag_s, lag)

    def abort(self, request_id: str) -> bool:
        """A client went away: its request leaves the engine and frees its blocks (now, or
        under async scheduling once its step in flight has updated). False if not live."""
        stream = self.streams.pop(request_id, None)
        if stream is None:
            return False
        stream.finish_reason = "abort"
        stream.wake.set()  # its stream ends (a no-op for the stream that called)
        pending = self.engine.arrivals.pending
        if stream.spec in pending:  # not admitted yet
            pending.remove(stream.spec)
        else:
            self.aborting.add(request_id)
            self._abort_due()
        self.aborted.append((request_id, self.engine.time_s))
        return True

    def _abort_due(self) -> None:
        queue = self.engine.batch_queue
        in_flight = queue.in_flight.running if queue is not None and queue.in_flight else ()
        for request_id in [i for i in self.aborting if i not in in_flight]:
            self.aborting.discard(request_id)
            if self.engine.scheduler.abort(request_id):
                self.unrecorded.append(request_id)

    async def run(self) -> None:
        """The clock loop, on the server's event loop until close()."""
        loop = asyncio.get_running_loop()
        while not self.closed:
            timeout = self.tick()
            self.wakeup.clear()
            timer = None if timeout is None else loop.call_later(timeout, self.wakeup.set)
            await self.wakeup.wait()  # a submit, an abort, close() or the timer
            if timer is not None:
                timer.cancel()

    def tick(self) -> float | None:
        """One pass of the clock loop: the steps due by now run, the tokens due go out; the
        wall seconds until the next thing is due (None: nothing until a request comes)."""
        now = self.now_s()
        self._abort_due()
        self._run_until(now)
        self._deliver(now)
        return self._next_due(now)

    def _run_until(self, now: float) -> None:
        """Every step that starts before `now`, its tokens put out for when it ends."""
        engine = self.engine
        engine.arrivals.hold_at(now)
        while (record := engine.step()) is not None:
            if self.unrecorded:
                aborted, self.unrecorded = tuple(self.unrecorded), []
                record = replace(record, finished=record.finished + aborted,
                                 released=record.released + aborted)
            self.records.append(record)
            self._collect(record)
            for listen in self.listeners:
                listen(record)

    def _collect(self, record: StepRecord) -> None:
        columns, streams = record.columns, self.streams
        requests, finished = self.engine.scheduler.requests, set(record.finished)
        out = []
        for row in np.flatnonzero(columns.sampled).tolist():
            request_id = columns.ids[row]
            stream = streams.get(request_id)
            if stream is None:
                continue
            done = request_id in finished
            count = stream.spec.output_len if done else requests[request_id].num_output_tokens
            out.append((stream, count, done))
        if out:
            self.outbox.append((record.time_s + record.step_time_ms / 1000.0, out))

    def _deliver(self, now: float) -> None:
        outbox = self.outbox
        while outbox and outbox[0][0] <= now:
            end_s, out = outbox.popleft()
            self.lag_s = (now - end_s) / self.time_scale
            for stream, count, done in out:
                if stream.finish_reason is not None:
                    continue  # aborted meanwhile
                if stream.num_tokens == 0:
                    self.num_prompt_tokens += stream.spec.prompt_len
                self.num_generation_tokens += count - stream.num_tokens
                self.latencies.observe(stream.arrival_s, stream.last_token_s, end_s, done)
                stream.last_token_s = end_s
                stream.num_tokens = count
                if done:
                    stream.finish_reason = stream.stop_reason
                    self.num_finished[stream.stop_reason] = self.num_finished.get(
                        stream.stop_reason, 0) + 1
                    del self.streams[stream.spec.id]
                stream.wake.set()
        if not outbox and not self.engine.scheduler.has_unfinished:
            self.lag_s = 0.0

    def _next_due(self, now: float) -> float | None:
        """Wall seconds until the next step starts or tokens are due (None: nothing to do)."""
        engine, due = self.engine, []
        if self.outbox:
            due.append(self.outbox[0][0])
        if engine.scheduler.has_unfinished and engine.time_s >= now:
            due.append(engine.time_s)  # the next step's start (before now: it waits on arrivals)
        if len(engine.arrivals.pending) > (engine.arrivals.gate is not None):
            due.append(now)
        return max(0.0, (min(due) - now) / self.time_scale) if due else None

    def close(self) -> None:
        """End every stream ("abort") and the clock loop: shutdown is prompt."""
        self.closed = True
        for stream in self.streams.values():
            stream.finish_reason = "abort"
            stream.wake.set()
        self.streams.clear()
        self.wakeup.set()
        for listen in self.listeners:
            listen(None)
