"""A quiet stretch of decode-only steps kept as one compact record (the engine's fast-forward).

Every running request decodes one token a step, nobody arrives, is admitted or preempted, and
only the last step may finish requests. `DecodeStretch.records()` expands the run into the exact
StepRecords the step-by-step path yields; summaries never need to expand it.

    step j of k:  start = start0 + j   new block where (start0 + j) % block_size == 0
                                        'stored' where (start0 + j + 1) % block_size == 0
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from servescope.core.records import BlockEvent, ScheduledColumns, StepRecord


def periodic(first: np.ndarray, period: int, num_steps: int) -> tuple[np.ndarray, np.ndarray]:
    """(steps, rows) with steps = first[row] + m * period < num_steps, ordered by step, then
    row: where each row reaches a block boundary during a run."""
    if num_steps <= period:  # each row at most once: sorting a few Python ints is cheaper
        pairs = sorted((f, row) for row, f in enumerate(first.tolist()) if f < num_steps)
        return (np.array([f for f, _ in pairs], np.int64),
                np.array([row for _, row in pairs], np.int64))
    order = np.argsort(first, kind="stable")  # within a period: by first boundary, then row
    repeats = -(-num_steps // period)
    steps = (first[order] + period * np.arange(repeats)[:, None]).ravel()
    rows = np.tile(order, repeats)
    keep = steps < num_steps
    return steps[keep], rows[keep]


@dataclass
class DecodeBlocks:
    """What the KV cache manager did over a run, in (step, row) order: the block each crossing
    took, which of those it evicted from the prefix cache, and each 'stored' event."""

    steps: np.ndarray  # the step of each new block
    rows: np.ndarray  # the running-batch row that took it
    blocks: list[int]
    evicted: set[int]
    stored: list[tuple[int, int, tuple[int, ...]]]  # (step, row, blocks), by step then row


@dataclass
class DecodeStretch:
    """Steps step0 .. step0 + num_steps - 1 of a run; arrays are per step."""

    step0: int
    iter0: int
    time_s: np.ndarray  # num_steps + 1 clock values: the start of each step, then the end
    step_time_ms: np.ndarray
    ids: tuple[str, ...]  # the running batch, in scheduling order
    start0: np.ndarray  # num_computed_tokens of each row before the first step
    kv: DecodeBlocks
    num_free_blocks: np.ndarray
    kv_waste: dict[str, np.ndarray]
    finished: tuple[str, ...]  # in the last step
    freed_blocks: tuple[int, ...]  # in the last step's update
    num_usable_blocks: int
    token_budget: int
    max_num_seqs: int

    @property
    def num_steps(self) -> int:
        return len(self.step_time_ms)

    def records(self, first: int = 0) -> Iterator[StepRecord]:
        """The run's records from step `first` on (next(run.records(j)): step j's alone)."""
        kv = self.kv
        new_at = np.searchsorted(kv.steps, np.arange(self.num_steps + 1))
        stored_steps = np.array([s for s, _, _ in kv.stored], np.int64)
        stored_at = np.searchsorted(stored_steps, np.arange(self.num_steps + 1))
        ones = np.ones(len(self.ids), np.int64)
        sampled, prefill = ones.astype(bool), np.zeros(len(self.ids), bool)
        ids, waste = list(self.ids), self.kv_waste
        last = self.num_steps - 1
        for j in range(first, self.num_steps):
            lo, hi = int(new_at[j]), int(new_at[j + 1])
            rows = kv.rows[lo:hi].tolist()
            blocks = kv.blocks[lo:hi]
            stored = kv.stored[int(stored_at[j]):int(stored_at[j + 1])]
            end = j == last
            yield StepRecord(
                step=self.step0 + j, iter=self.iter0 + j, time_s=float(self.time_s[j]),
                step_time_ms=float(self.step_time_ms[j]), arrivals=(),
                columns=ScheduledColumns(ids, ones, self.start0 + j, sampled, prefill),
                new=(), resumed=(), preempted=(), finished=self.finished if end else (),
                released=self.finished if end else (), rejected=(),
                new_blocks={ids[r]: (b,) for r, b in zip(rows, blocks, strict=True)},
                freed_blocks=self.freed_blocks if end else (),
                block_events=self._events(rows, blocks, stored), num_cached_tokens={},
                running=self.ids, waiting=(), num_free_blocks=int(self.num_free_blocks[j]),
                num_usable_blocks=self.num_usable_blocks, token_budget=self.token_budget,
                max_num_seqs=self.max_num_seqs,
                kv_waste={key: int(values[j]) for key, values in waste.items()})

    def _events(self, rows: list[int], blocks: list[int],
                stored: list[tuple[int, int, tuple[int, ...]]]) -> tuple[BlockEvent, ...]:
        """Row by row, as the step path raises them: the eviction its new block causes, then
        the block its token completes."""
        evicted = self.kv.evicted
        keyed = [(row, 0, BlockEvent("removed", (block,)))
                 for row, block in zip(rows, blocks, strict=True) if block in evicted]
        keyed += [(row, 1, BlockEvent("stored", done, self.ids[row])) for _, row, done in stored]
        keyed.sort(key=lambda item: (item[0], item[1]))
        return tuple(event for _, _, event in keyed)
