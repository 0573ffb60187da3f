"""The running list as columns, so a step of plain decodes is a few numpy operations.

Slot i holds running[i] (admission order). While a request is in the batch its counters live
here and its Request attributes read through to these arrays. Token times are kept as runs of
consecutive engine iterations: a decode step only lengthens each open run.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from servescope.core.request import Request

# Rows up to which a column sums faster as a Python list than by numpy (timeit, Python 3.11,
# numpy int64: 0.3 against 1.2 us at 10 rows, 0.7 against 1.2 at 64, 2.5 against 1.3 at 256)
PLAIN_SUM_ROWS = 64


class RunningBatch:
    def __init__(self, capacity: int = 64) -> None:
        self.requests: list[Request] = []
        self.ids: list[str] = []
        self._alloc(capacity)

    def _alloc(self, capacity: int) -> None:
        def grow(old: np.ndarray | None) -> np.ndarray:
            new = np.zeros(capacity, np.int64)
            if old is not None:
                new[: len(old)] = old
            return new

        old = getattr(self, "num_computed", None)
        self.num_computed = grow(old)
        self.num_output = grow(getattr(self, "num_output", None))
        self.prompt_len = grow(getattr(self, "prompt_len", None))
        self.output_len = grow(getattr(self, "output_len", None))
        self.stretch_start = grow(getattr(self, "stretch_start", None))
        self.stretch_len = grow(getattr(self, "stretch_len", None))
        self.num_placeholders = grow(getattr(self, "num_placeholders", None))  # (async) in flight

    def __len__(self) -> int:
        return len(self.requests)

    def __bool__(self) -> bool:
        return bool(self.requests)

    def __iter__(self) -> Iterator[Request]:
        return iter(self.requests)

    def __getitem__(self, index: int) -> Request:
        return self.requests[index]

    def append(self, request: Request) -> None:
        slot = len(self.requests)
        if slot == len(self.num_computed):
            self._alloc(2 * slot)
        self.num_computed[slot] = request.num_computed_tokens  # kept by the request while out
        self.num_output[slot] = request.num_output_tokens
        self.prompt_len[slot] = request.prompt_len
        self.output_len[slot] = request.output_len
        self.stretch_start[slot] = -1
        self.stretch_len[slot] = 0
        self.num_placeholders[slot] = request.num_output_placeholders
        self.requests.append(request)
        self.ids.append(request.id)
        request.batch = self
        request.slot = slot

    def pop(self) -> Request:
        request = self.requests[-1]
        self._detach(request)
        self.requests.pop()
        self.ids.pop()
        return request

    def remove_many(self, leaving: list[Request]) -> None:
        """Take requests out, keeping the others' order and closing their columns up."""
        if len(leaving) == 1:
            self._remove_one(leaving[0])
            return
        keep = np.ones(len(self.requests), bool)
        keep[[r.slot for r in leaving]] = False
        for request in leaving:
            self._detach(request)
        count = int(keep.sum())
        for name in ("num_computed", "num_output", "prompt_len", "output_len", "stretch_start",
                     "stretch_len", "num_placeholders"):
            column = getattr(self, name)
            column[:count] = column[: len(keep)][keep]
        self.requests = [r for r, k in zip(self.requests, keep, strict=True) if k]
        self.ids = [r.id for r in self.requests]
        for slot, request in enumerate(self.requests):
            request.slot = slot

    def remove(self, request: Request) -> None:
        self.remove_many([request])

    def _remove_one(self, request: Request) -> None:
        """remove_many of one request: the columns after its slot move up by one."""
        slot, end = request.slot, len(self.requests)
        self._detach(request)
        for column in (self.num_computed, self.num_output, self.prompt_len, self.output_len,
                       self.stretch_start, self.stretch_len, self.num_placeholders):
            column[slot:end - 1] = column[slot + 1:end]
        del self.requests[slot]
        del self.ids[slot]
        for moved in self.requests[slot:]:
            moved.slot -= 1

    def sample(self, slot: int, iteration: int) -> None:
        """One token for the request in `slot` at engine iteration `iteration`."""
        if self.stretch_start[slot] + self.stretch_len[slot] == iteration:
            self.stretch_len[slot] += 1
        else:
            self.close_stretch(slot)
            self.stretch_start[slot] = iteration
            self.stretch_len[slot] = 1
        self.num_output[slot] += 1

    def close_stretch(self, slot: int) -> None:
        if self.stretch_len[slot]:
            request = self.requests[slot]
            request.token_stretches.append((int(self.stretch_start[slot]),
                                            int(self.stretch_len[slot])))
            self.stretch_len[slot] = 0

    def _detach(self, request: Request) -> None:
        slot = request.slot
        self.close_stretch(slot)
        request.leave_batch(int(self.num_computed[slot]), int(self.num_output[slot]),
                            int(self.num_placeholders[slot]))

    def sample_chunk(self, lo: int, hi: int, iteration: int, count: int = 1) -> list[Request]:
        """One token for every slot in lo..hi-1 at each of `count` consecutive iterations from
        `iteration`; the requests that reached their output length."""
        stretch_start, stretch_len = self.stretch_start[lo:hi], self.stretch_len[lo:hi]
        broken = (stretch_start + stretch_len != iteration).nonzero()[0]
        for slot in (broken + lo).tolist():
            self.close_stretch(slot)
            self.stretch_start[slot] = iteration
        stretch_len += count
        num_output = self.num_output[lo:hi]
        num_output += count
        done = (num_output >= self.output_len[lo:hi]).nonzero()[0]
        return [self.requests[lo + i] for i in done.tolist()]

    def total_computed(self) -> int:
        n = len(self.requests)
        if n <= PLAIN_SUM_ROWS:  # (plain Python: a numpy call costs more than a few rows)
            return sum(self.num_computed[:n].tolist())
        return int(self.num_computed[:n].sum())
