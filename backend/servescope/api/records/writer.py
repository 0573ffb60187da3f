"""Records into a track's store (api/records/run_store.py): each packed against the stream state
once, with its row's count columns, in batches of a transaction each, and a keyframe every so often.
A track's own simulation writes through one (api/sessions/track.py), and so does a leap simulated
from a checkpoint in the scout's process (api/leaps/scout.py)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from servescope.api.errors import RecordLimitError
from servescope.api.records.run_store import Row, RunStore
from servescope.api.records.step_pack import pack_step
from servescope.api.records.stretch_pack import StretchPack
from servescope.api.wire.keyframes import keyframe
from servescope.api.wire.serialize import dumps, normalize, pack
from servescope.api.wire.stream_state import FINISHED, StreamState
from servescope.api.wire.text import dump
from servescope.core.decode_stretch import DecodeStretch
from servescope.core.records import StepRecord
from servescope.observability.meter import Meter

BATCH_RECORDS = 1024  # records per transaction at most
BATCH_S = 0.05  # and at least this often, so that the first frame and the scrubber move soon


class Writer:
    """`on_flush` hears of each committed batch (its rows); `meter` (the track's, for GET
    /metrics) observes every record, in order, when given."""

    def __init__(self, state: StreamState, store: RunStore, number: int, num_gpu_blocks: int,
                 interval: int, kf_cost: int, on_flush: Callable[[list[Row]], None],
                 meter: Meter | None = None, preempted: set[str] | None = None) -> None:
        self.state, self.store = state, store
        self.number, self.num_gpu_blocks = number, num_gpu_blocks
        self.interval, self.kf_cost = interval, kf_cost
        self.on_flush, self.meter = on_flush, meter
        self.kf_size = 0  # JSON size of the last keyframe (0: none taken yet)
        self.preempted = preempted or set()  # preempted and waiting to resume
        self.rows: list[Row] = []  # the batch being built
        self.kfs: list[tuple[int, str]] = []
        self.last_kf, self.since_kf, self.flushed = state.iter, 0, time.monotonic()

    def store_all(self, source: Callable[[], Any], max_records: int,
                  closed: Callable[[], bool]) -> None:
        """Every record `source` gives (api/records/track_source.py; a decode stretch stored in
        bulk) until it gives None or `closed()`; RecordLimitError past `max_records`. What was
        stored before a failure is flushed, so it stays readable."""
        n = 0
        try:
            while not closed():
                item = source()
                if item is None:
                    break
                if n >= max_records:
                    raise limit_error(max_records)
                if isinstance(item, DecodeStretch):
                    num_steps = min(item.num_steps, max_records - n)
                    self.store_stretch(item, n, num_steps)
                    if num_steps < item.num_steps:
                        raise limit_error(max_records)
                    n += num_steps
                else:
                    self.store_record(item, n)
                    n += 1
        finally:
            self.flush()

    def store_record(self, item: dict[str, Any] | StepRecord, n: int) -> None:
        if isinstance(item, StepRecord):
            rec, text = pack_step(self.state, item, n)
        else:
            rec = normalize(item)
            rec["iter"] = n  # the stream's own index, whatever a recording says
            text = dumps(pack(self.state, rec))
        if self.meter is not None:
            self.meter.observe(rec)  # append-only: the loop reads it up to the published head
        self.rows.append((n, rec["step"], rec["time_s"],
                          rec["time_s"] + rec["step_time_ms"] / 1000.0, text,
                          sum(e["n"] for e in rec["scheduled"]), len(rec["running"]),
                          len(rec["waiting"]), rec["kv_usage"], *self._state_counts(rec)))
        if self.keyframe_due(n, len(text)):
            if isinstance(item, StepRecord):  # the keyframe keeps its record whole
                rec["kv_events"] = item.event_dicts()
            self.take_keyframe(n)
        self.flush_due()

    def store_stretch(self, run: DecodeStretch, n: int, num_steps: int) -> None:
        """The first `num_steps` records of a decode stretch, stored in bulk
        (api/records/stretch_pack.py) as store_record stores each of them, from index n."""
        packed = StretchPack(self.state, run, n)
        if self.meter is not None:
            packed.observe(self.meter, num_steps)
        a = 0
        while a < num_steps:
            b = min(num_steps, a + max(1, BATCH_RECORDS - len(self.rows)))
            self.rows += packed.rows(a, b, len(self.preempted))
            for j in range(a, b):
                if self.keyframe_due(n + j, len(packed.texts[j])):
                    packed.apply(self.state, a, j + 1)
                    self.state.last = packed.record(j)
                    self.take_keyframe(n + j)
                    a = j + 1
            if a < b:
                packed.apply(self.state, a, b)
            a = b
            self.flush_due()

    def keyframe_due(self, n: int, size: int) -> bool:
        """After record n of `size` bytes: every `interval` records, and not before the records
        since the last keyframe weigh as much as it does (a big pool's keyframes stay a
        bounded share of the store) nor as much as building it costs (a long request list's
        keyframes stay a bounded share of the time)."""
        self.since_kf += size
        return (n - self.last_kf >= self.interval
                and self.since_kf >= max(self.kf_size, self.kf_cost))

    def take_keyframe(self, n: int) -> None:
        kf_text = dump(keyframe(self.state, self.number, self.num_gpu_blocks))
        self.kfs.append((n, kf_text))
        self.kf_size = len(kf_text)
        self.last_kf, self.since_kf = n, 0

    def _state_counts(self, rec: dict[str, Any]) -> tuple[int, int, int, int]:
        """(num_prefill, num_decode, num_preempted, num_waiting_for_kv) of a record, for the
        timeline's density (the stream state has folded it in: a request it preempted after it
        finished, under async scheduling, is not waiting to resume). A request both preempted
        and waiting for KV counts as preempted, as the timeline's spans have it."""
        status = self.state.status
        self.preempted.update(rid for rid in rec["preempted"] if status[rid] != FINISHED)
        self.preempted.difference_update(rec["resumed"], rec["new"], rec["finished"])
        decode = sum(1 for e in rec["scheduled"] if e.get("kind") == "decode")
        kv = sum(1 for rid in rec.get("waiting_for_kv", ()) if rid not in self.preempted)
        return len(rec["scheduled"]) - decode, decode, len(self.preempted), kv

    def flush_due(self) -> None:
        if len(self.rows) >= BATCH_RECORDS or time.monotonic() - self.flushed >= BATCH_S:
            self.flush()

    def flush(self) -> None:
        rows, kfs = self.rows, self.kfs
        self.rows, self.kfs, self.flushed = [], [], time.monotonic()
        if not rows and not kfs:
            return
        self.store.append(rows, kfs)
        if rows:
            self.on_flush(rows)


def limit_error(max_records: int) -> RecordLimitError:
    return RecordLimitError(
        f"the run stopped at this server's max_records_per_session ({max_records:,} records) "
        f"before its end; simulate a window or a sample of the trace")
