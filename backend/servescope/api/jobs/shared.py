"""Answers of heavy jobs shared between the requests that ask the same question of the same run:
a page load in a burst of 60 gets the overview its run already has, or waits for the one being
computed, instead of a job (and a worker process) of its own, and so never a 503 for work done.

An answer is kept under its key (what is asked, of which run) with the run's `version` (how far
it was stored: head and done); a request for a newer version computes anew, one for the version
kept (or while one is computing, of any version) shares it. The newest `max_entries` keys are
kept. A failed computation is not kept: the next request tries again."""

from __future__ import annotations

import asyncio
import functools
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Any


@dataclass
class _Answer:
    version: Hashable
    task: asyncio.Future[Any]


class SharedAnswers:
    def __init__(self, max_entries: int = 64) -> None:
        self.max_entries = max_entries
        self._answers: OrderedDict[Hashable, _Answer] = OrderedDict()
        self.num_computed = 0  # computations started (the rest of the requests shared one)

    async def get(self, key: Hashable, version: Hashable,
                  compute: Callable[[], Awaitable[Any]]) -> Any:
        """`compute()`'s answer for `key` at `version`, or the one kept or computing for it.
        A requester that leaves does not cancel a computation others may share."""
        kept = self._answers.get(key)
        if kept is None or _stale(kept, version):
            kept = _Answer(version, asyncio.ensure_future(compute()))
            kept.task.add_done_callback(functools.partial(self._settled, key))
            self.num_computed += 1
            self._answers[key] = kept
            while len(self._answers) > self.max_entries:
                self._answers.popitem(last=False)
        self._answers.move_to_end(key)
        return await asyncio.shield(kept.task)

    def _settled(self, key: Hashable, task: asyncio.Future[Any]) -> None:
        """A failed computation is dropped (its error still reaches every requester)."""
        if task.cancelled() or task.exception() is not None:
            kept = self._answers.get(key)
            if kept is not None and kept.task is task:
                del self._answers[key]


def _stale(kept: _Answer, version: Hashable) -> bool:
    """A settled answer of another version, or a failure not dropped yet."""
    task = kept.task
    if not task.done():
        return False
    return kept.version != version or task.cancelled() or task.exception() is not None
