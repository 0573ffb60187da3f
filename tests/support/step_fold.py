"""What a run's records imply about its pool and requests, folded from the records and the
request specs alone (not from the page's code): blocks held before a step, after its schedule
and after its update; each request's tokens (prompt + sampled), its finish step; prefix-cache
evictions. tests/frontend/test_caption_truth.py checks the page's captions against it.

A record is applied in two phases, as the engine made it: `schedule` (victims give back their
tables, new blocks are appended) then `update` (tokens sampled, released tables freed)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from servescope.core.config import EngineConfig
from servescope.core.request import RequestSpec


class StepFold:
    def __init__(self, config: EngineConfig, specs: list[RequestSpec], num_usable: int) -> None:
        self.config = config
        self.num_usable = num_usable  # the records': a priced config sizes its pool itself
        self.specs = {s.id: s for s in specs}
        self.tables: dict[str, list[int]] = {}
        self.ref: Counter[int] = Counter()  # block -> tables holding it
        self.held = bytearray(num_usable + 1)  # 1 where a table holds the block (0: null block)
        self.tokens = {s.id: s.prompt_len for s in specs}  # prompt + sampled so far
        self.finish_step: dict[str, int] = {}
        self.num_free_before: int | None = None  # after the previous record's update
        self.given_back: dict[str, list[int]] = {}  # this record's freed tables, by request
        self.removed: set[int] = set()  # blocks whose hash this record removed (evicted)
        # Under async scheduling step N's update (freeing its finished) runs after step N + 1
        # was scheduled: a record's released tables go at the next record's schedule.
        self.deferred: list[str] = []

    @property
    def num_free(self) -> int:
        return self.num_usable - len(self.ref)

    def _drop(self, rid: str) -> None:
        table = self.tables.pop(rid, [])
        self.given_back[rid] = table
        for b in table:
            self.ref[b] -= 1
            if self.ref[b] == 0:
                del self.ref[b]
                self.held[b] = 0

    def schedule(self, rec: dict[str, Any]) -> None:
        self.num_free_before = self.num_free
        self.given_back = {}
        for rid in rec["preempted"]:
            self._drop(rid)
        for rid, blocks in rec["new_blocks"].items():
            self.tables.setdefault(rid, []).extend(blocks)
            self.ref.update(blocks)
            for b in blocks:
                self.held[b] = 1
        self.removed = {b for ev in rec["kv_events"] if ev["type"] == "BlockRemoved"
                        for b in ev["block_ids"]}

    def update(self, rec: dict[str, Any]) -> None:
        for rid in self.deferred:
            self._drop(rid)
        for e in rec["scheduled"]:
            if e["sampled"]:
                self.tokens[e["id"]] += 1
        for rid in rec["finished"]:
            self.finish_step[rid] = rec["step"]
        if self.config.async_scheduling:
            self.deferred = list(rec["released"])
        else:
            for rid in rec["released"]:
                self._drop(rid)

    def hits_in_use_bound(self, rid: str, running: list[str]) -> int:
        """At most how many blocks of `rid`'s prefix-cache hit running requests hold (they
        count as already there in vLLM's full-sequence admission check): the longest run of
        leading prefix tokens `rid` shares with one running request (segments of one key share
        tokens up to the shorter; a multi-turn history shares only its common turns; a prompt
        shorter than its segments holds only its prompt's part of them): RequestSpec's sharing
        contract, and vLLM's chained block hashes (kv_cache_utils.py) name a block by every
        token up to its end."""
        spec = self.specs[rid]
        if not self.config.enable_prefix_caching or not spec.prefix:
            return 0
        shared = max((min(self._common_prefix(spec.prefix, self.specs[r].prefix),
                          self.specs[r].prompt_len) for r in running if r != rid), default=0)
        shared = min(shared, spec.prompt_len, self.tokens[rid] - 1)
        return shared // self.config.block_size

    @staticmethod
    def _common_prefix(mine: tuple[tuple[str, int], ...],
                       theirs: tuple[tuple[str, int], ...]) -> int:
        common = 0
        for (key, n), (other, m) in zip(mine, theirs, strict=False):
            if key != other:
                break
            common += min(n, m)
            if n != m:
                break
        return common

    def aligned_free_run(self, num_blocks: int) -> bool:
        """Whether the buddy arena over blocks 1.. has a free chunk of `num_blocks` (a power of
        two): with eager merging, exactly when an aligned run of that many blocks is free."""
        held = self.held
        return any(held[1 + o:1 + o + num_blocks].count(1) == 0
                   for o in range(0, self.num_usable - num_blocks + 1, num_blocks))
