"""What feeds a live track: a live engine's records (api/openai/live.py), handed from the event
loop that makes them to the track's thread, which waits for the next one instead of simulating."""

from __future__ import annotations

import queue
from collections.abc import Callable

from servescope.core.records import StepRecord

# how often a waiting track's thread looks whether its track was closed (a closed track's
# thread ends within this); a wait, not a poll of the engine: records wake it at once
WAIT_S = 0.5


class LiveFeed:
    """`put` is the engine's listener (a record, or None when the engine closes); `next` is
    the track's source (api/records/track_source.py's Source). Before each wait `before_wait`
    runs on the track's thread (the track's writer flushes, so a viewer sees the last record
    while nothing runs), and a wait ends with None once `stopped()` (the track closed)."""

    def __init__(self) -> None:
        self.records: queue.SimpleQueue[StepRecord | None] = queue.SimpleQueue()
        self.before_wait: Callable[[], None] = lambda: None
        self.stopped: Callable[[], bool] = lambda: False

    def put(self, record: StepRecord | None) -> None:
        self.records.put(record)

    def next(self) -> StepRecord | None:
        """The next record, waiting for it; None when the engine or the track has closed."""
        try:
            return self.records.get_nowait()
        except queue.Empty:
            pass
        self.before_wait()
        while not self.stopped():
            try:
                return self.records.get(timeout=WAIT_S)
            except queue.Empty:
                continue
        return None
