"""Blocks a vLLM recording says are in use without saying which request holds them (the
iteration log gives the KV usage, a KV-event capture the cache's contents), as block tables of
placeholder holders, so that a replay's tables, its free-block count and the pool view agree.

Slots are grouped CHUNK at a time; chunk c is held by `<prefix><c>`. A record can append to a
table or drop it but not shrink it, so a chunk that loses a slot is released and what it still
holds is listed again under its other name (`<prefix><c>'`): a step costs at most CHUNK block ids
per chunk it touches. Ids starting with "~" are placeholders, never a request's own id.
"""

from __future__ import annotations

from collections.abc import Iterable

CHUNK = 32


class Holders:
    """Which placeholder holds each slot in use."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.held: dict[int, set[int]] = {}
        self._other: set[int] = set()  # chunks currently named with the trailing "'"

    def name(self, chunk: int) -> str:
        return f"{self.prefix}{chunk}" + ("'" if chunk in self._other else "")

    def update(self, added: Iterable[int],
               removed: Iterable[int]) -> tuple[dict[str, tuple[int, ...]], tuple[str, ...]]:
        """(new_blocks, released) of the record in which `removed` slots stop being used and
        `added` slots start (a slot may be in both: removed first)."""
        shrunk: dict[int, bool] = {}  # chunk -> whether its table held blocks before
        for slot in removed:
            chunk = slot // CHUNK
            blocks = self.held.get(chunk, set())
            shrunk.setdefault(chunk, bool(blocks))
            blocks.discard(slot)
        grown: dict[int, list[int]] = {}
        for slot in added:
            chunk = slot // CHUNK
            self.held.setdefault(chunk, set()).add(slot)
            grown.setdefault(chunk, []).append(slot)
        new_blocks: dict[str, tuple[int, ...]] = {}
        released: list[str] = []
        for chunk, had in shrunk.items():
            if had:
                released.append(self.name(chunk))
            self._other ^= {chunk}
            if self.held.get(chunk):
                new_blocks[self.name(chunk)] = tuple(sorted(self.held[chunk]))
        for chunk, slots in grown.items():
            if chunk not in shrunk:
                new_blocks[self.name(chunk)] = tuple(slots)
        return new_blocks, tuple(released)
