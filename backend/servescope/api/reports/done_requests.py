"""A track's finished requests as a few columns that a job's worker process takes cheaply (numpy
arrays pickle at memory speed; Request objects would drag their batch and block hashes), and
their per-request metrics rebuilt there exactly as core.metrics.request_metrics gives them."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from servescope.core import metrics
from servescope.core.engine import Engine
from servescope.core.request import FinishedRequest


@dataclass(frozen=True)
class DoneRequests:
    ids: list[str]
    ints: np.ndarray  # int64, a row a request: prompt_len, output_len, num_preemptions,
    # num_cached_tokens, drafts, accepted (the last two -1 when the run does not speculate)
    times: np.ndarray  # float64, a row a request: arrival, first scheduled, finish (nan: None)
    # request k's token stretches are runs[stretch_offsets[k]:stretch_offsets[k+1]]
    stretch_offsets: np.ndarray
    runs: np.ndarray  # int64, a row a run of sampled tokens: first engine iteration, count
    step_end_s: np.ndarray  # the engine's clock: when each iteration ended
    frontend_ms: float

    @classmethod
    def of(cls, engine: Engine) -> DoneRequests:
        """The engine's finished requests so far (a thread's snapshot: the list only grows)."""
        done = list(engine.done_requests)
        # after `done`, so that it covers their tokens; copied under the GIL (a buffer held while
        # the simulating thread appends would fail its append)
        clock = np.frombuffer(engine.step_end_s.tobytes(), np.float64)
        runs = [r.all_token_stretches for r in done]
        flat = [x for rs in runs for run in rs for x in run]
        return cls(
            [r.id for r in done],
            np.array([(r.prompt_len, r.output_len, r.num_preemptions, r.num_cached_tokens,
                       _or_none(r.drafts), _or_none(r.accepted)) for r in done],
                     np.int64).reshape(-1, 6),
            # None (not scheduled, not finished) becomes nan
            np.array([(r.arrival_time, r.first_scheduled_time, r.finish_time) for r in done],
                     np.float64).reshape(-1, 3),
            np.cumsum([0] + [len(rs) for rs in runs]), np.array(flat, np.int64).reshape(-1, 2),
            clock, engine.config.frontend_overhead_ms or 0.0)

    def __len__(self) -> int:
        return len(self.ids)

    def metrics(self) -> list[dict[str, Any]]:
        """request_metrics of each request, in the engine's finishing order."""
        ends = self.step_end_s.tolist()
        offsets = self.stretch_offsets.tolist()
        runs = self.runs.tolist()
        ints, times = self.ints.tolist(), self.times.tolist()
        out = []
        for k, rid in enumerate(self.ids):
            token_times = [ends[i] for first, count in runs[offsets[k]:offsets[k + 1]]
                           for i in range(first, first + count)]
            *counts, drafts, accepted = ints[k]
            out.append(metrics.request_metrics(cast(FinishedRequest, _Done(
                rid, *counts, None if drafts < 0 else drafts, None if accepted < 0 else accepted,
                *(None if math.isnan(t) else t for t in times[k]), token_times)),
                self.frontend_ms))
        return out


class _Done:
    """What request_metrics reads of a Request."""

    __slots__ = ("id", "prompt_len", "output_len", "num_preemptions", "num_cached_tokens",
                 "drafts", "accepted", "arrival_time", "first_scheduled_time", "finish_time",
                 "token_times")

    def __init__(self, *values: Any) -> None:
        for name, value in zip(self.__slots__, values, strict=True):
            setattr(self, name, value)


def _or_none(count: int | None) -> int:
    return -1 if count is None else count
