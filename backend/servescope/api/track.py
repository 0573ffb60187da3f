"""One engine's record stream inside a session: computed lazily, packed once for every viewer,
with keyframes kept every N records so that any position is reachable without replaying."""

from __future__ import annotations

import bisect
import json
from collections.abc import Callable, Iterator
from typing import Any

from servescope.api.serialize import StreamState, keyframe, normalize, pack, unpack
from servescope.core.engine import Engine
from servescope.observability.meter import Meter

Source = Callable[[], dict[str, Any] | None]  # the next record as to_dict(), None at the end


def dumps(msg: Any) -> str:
    return json.dumps(msg, separators=(",", ":"), allow_nan=False)


def engine_source(engine: Engine) -> Source:
    def step() -> dict[str, Any] | None:
        record = engine.step()
        return None if record is None else record.to_dict()
    return step


def replay_source(records: list[dict[str, Any]]) -> Source:
    it = iter(records)
    return lambda: next(it, None)


class Track:
    def __init__(self, number: int, source: Source, requests: list[dict[str, Any]],
                 num_gpu_blocks: int, keyframe_interval: int, max_records: int,
                 summary: Callable[[], dict[str, Any]] | None = None,
                 enable_prefix_caching: bool = True) -> None:
        self.number = number
        self.source = source
        self.num_gpu_blocks = num_gpu_blocks
        self.interval = keyframe_interval
        self.max_records = max_records
        self._summary = summary
        self.requests = requests
        self.state = StreamState(requests)
        self.packed: list[str] = []  # JSON text of each packed record
        self.size: list[int] = []
        self.start_s: list[float] = []  # time_s of each record
        self.end_s: list[float] = []  # time_s + step_time_ms of each record
        self.steps: list[int] = []
        self.kf_iters: list[int] = [-1]
        self.kf_msgs: list[dict[str, Any] | str] = [keyframe(self.state, number, num_gpu_blocks)]
        self._kf_size = 0  # JSON size of the last keyframe (estimated until it is sent)
        self._bytes_since_kf = 0
        self.done = False
        self.summary: dict[str, Any] | None = None
        self.engine: Engine | None = None  # for per-request metrics; None for a replay
        self.meter = Meter(requests, enable_prefix_caching)  # vLLM's metrics (GET /metrics)

    @property
    def head(self) -> int:
        """Index of the last computed record (-1: none)."""
        return len(self.packed) - 1

    def advance(self) -> bool:
        """Compute one more record; False once the run is complete."""
        if self.done:
            return False
        rec = self.source() if len(self.packed) < self.max_records else None
        if rec is None:
            self.done = True
            self.summary = self._summary() if self._summary else {}
            return False
        rec = normalize(rec)
        rec["iter"] = len(self.packed)  # the stream's own index, whatever a recording says
        self.meter.observe(rec)
        text = dumps(pack(self.state, rec))
        self.packed.append(text)
        self.size.append(len(text))
        self.start_s.append(rec["time_s"])
        self.end_s.append(rec["time_s"] + rec["step_time_ms"] / 1000.0)
        self.steps.append(rec["step"])
        self._bytes_since_kf += len(text)
        # Every `interval` records, and not before the records since the last keyframe weigh
        # as much as it does: a big pool's keyframes stay a bounded share of time and memory.
        if (self.head - self.kf_iters[-1] >= self.interval
                and self._bytes_since_kf >= self._kf_size):
            kf = keyframe(self.state, self.number, self.num_gpu_blocks)
            self.kf_iters.append(self.head)
            self.kf_msgs.append(kf)
            self._kf_size = 16 * (len(kf["block_owner"]) + len(kf["status"]))
            self._bytes_since_kf = 0
        return True

    def keyframe_before(self, iter_: int) -> tuple[int, str]:
        """The latest kept keyframe at or before record `iter_`, as JSON (made on first use)."""
        k = bisect.bisect_right(self.kf_iters, iter_) - 1
        msg = self.kf_msgs[k]
        if not isinstance(msg, str):
            msg = self.kf_msgs[k] = dumps(msg)
        return self.kf_iters[k], msg

    def frame(self, after: int, upto: int) -> str | None:
        """A `step` message with records after..upto (inclusive); None when there are none."""
        if upto <= after:
            return None
        body = ",".join(self.packed[after + 1:upto + 1])
        return f'{{"type":"step","v":1,"engine":{self.number},"records":[{body}]}}'

    def index_at_time(self, t: float) -> int:
        """Last computed record that starts at or before simulated time t (-1: none)."""
        return bisect.bisect_right(self.start_s, t) - 1

    def index_at_step(self, step: int) -> int:
        """First computed record whose step clock is >= step (clamped to the head)."""
        return min(bisect.bisect_left(self.steps, step), self.head)

    def records(self) -> Iterator[dict[str, Any]]:
        """The computed records in to_dict() form, decoded from the packed stream."""
        state = StreamState(self.requests)
        for text in self.packed:
            yield unpack(state, json.loads(text))

    def done_message(self) -> str:
        return dumps({"type": "done", "v": 1, "engine": self.number,
                      "summary": self.summary or {}, "num_records": len(self.packed)})
