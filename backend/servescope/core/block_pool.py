"""The physical KV block pool: free queue, ref counts, prefix-cache map and the events they raise.

Free queue (block 0 is the null block and is never in it; see core/free_queue.py):

    head -> [freed unhashed blocks, newest first] [initial order 1..N-1] [hashed, LRU] <- tail

Allocation pops the head, so freed blocks without a hash are reused first (LIFO); blocks with a
hash go to the tail and are evicted last (LRU). A cached block loses its hash only when it is
handed out again.

Own-block hashes (negative: core/prefix.py) are unique to their request, so only that request
can look them up, and only when it is admitted again after a preemption. With `defer_own` set
(the engine sets it when request ids are unique) they enter the cache map when their request
is preempted instead of when they are computed: a trace without shared prefixes then keeps the
map empty. Lookups and eviction events are the same either way (tests/core/test_block_pool.py).

KV events for a subscriber (vLLM's BlockPool kv_event_queue, enable_kv_cache_events: the
BlockStored / BlockRemoved a fleet's router indexes, core/fleet.py): while `kv_event_queue`
is a list, each block given a hash adds ("stored", hashes) and each cached block evicted
("removed", hashes), whether or not anyone records the run. Own hashes are left out: they name
one request's private tokens, which no other prompt holds (core/prefix.py), so no router can
match them. (Hence a counting manager, core/kv_counting.py, owes a subscriber nothing: it runs
only while every hash is a request's own.)

The events wait as PendingEvents: a plain list of block ids stands for a 'removed' event
each, made into BlockEvents (block_events) only if a record is built (a run ahead builds none).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from typing import cast

from servescope.core.free_queue import FreeQueue
from servescope.core.records import BlockEvent

NULL_BLOCK = 0
BlockHash = int  # see prefix.BlockHasher
KVEvent = tuple[str, tuple[BlockHash, ...]]  # ("stored" | "removed", block hashes)
PendingEvent = BlockEvent | list[int]  # a list: a 'removed' event per block, in order


# The largest pool the core builds, whoever asks (the server caps pools lower, max_gpu_blocks):
# 2^24 blocks hold ~0.4 GB of per-block lists; vLLM's largest real pools (a few GPUs of
# block_size 16) are under a million blocks.
MAX_NUM_GPU_BLOCKS = 1 << 24


class BlockPool:
    def __init__(self, num_gpu_blocks: int, enable_caching: bool) -> None:
        if not 2 <= num_gpu_blocks <= MAX_NUM_GPU_BLOCKS:
            raise ValueError(f"num_gpu_blocks {num_gpu_blocks:,} is outside "
                             f"2..{MAX_NUM_GPU_BLOCKS:,} (core.block_pool.MAX_NUM_GPU_BLOCKS)")
        self.num_gpu_blocks = num_gpu_blocks
        self.enable_caching = enable_caching
        self.ref_cnt = [0] * num_gpu_blocks
        self.block_hash: list[BlockHash | None] = [None] * num_gpu_blocks
        self.free_queue = FreeQueue(num_gpu_blocks)
        # hash -> its block, or its copies in order (a dict) once there are two: most hashes
        # have one copy, which then costs no dict of its own
        self.cached: dict[BlockHash, int | dict[int, None]] = {}
        self._num_multi = 0  # hashes with two copies or more
        self.defer_own = False
        self._num_own = 0  # deferred own-block hashes in the map
        self.events: list[PendingEvent] = []
        self.record_events = True  # False while nobody reads the records (Engine.run_to_end)
        self.freed: list[int] = []
        self.kv_event_queue: list[KVEvent] | None = None  # a list while subscribed (above)
        self.num_told = 0  # evictions to come whose 'removed' went out already (tell_evictions)

    @property
    def num_usable_blocks(self) -> int:
        return self.num_gpu_blocks - 1

    @property
    def num_free_blocks(self) -> int:
        return self.free_queue.num_free

    def get_new_blocks(self, n: int, evicted: list[int] | None = None) -> list[int]:
        """Pop n blocks off the head; those that held a hash leave the prefix cache, with a
        'removed' event each (or, given `evicted`, listed there for the caller to report)."""
        blocks, num_unhashed = self.free_queue.pop(n)
        ref_cnt = self.ref_cnt
        for block in blocks:
            ref_cnt[block] = 1
        if num_unhashed == n:
            return blocks
        gone = blocks[num_unhashed:]  # the hashed blocks of the tail: evicted
        self._evict(gone)
        if evicted is not None:
            evicted += gone
        elif self.record_events:
            self.events.append(gone)
        return blocks

    def _evict(self, blocks: list[int]) -> None:
        block_hash, cached = self.block_hash, self.cached
        if self.kv_event_queue is not None:
            told = min(self.num_told, len(blocks))
            self.num_told -= told
            if told < len(blocks):
                self._publish("removed", list(map(block_hash.__getitem__, blocks[told:])))
        if cached and not self._num_multi and not self._num_own:
            keys = cast(list[BlockHash], list(map(block_hash.__getitem__, blocks)))
            if self.defer_own:  # own hashes are not in the map
                keys = [key for key in keys if key >= 0]
            deque(map(cached.__delitem__, keys), 0)  # every hash has one copy: drop them
        elif cached:
            for block in blocks:
                self._forget(block, cast(BlockHash, block_hash[block]))
        for block in blocks:
            block_hash[block] = None

    def _forget(self, block: int, key: BlockHash) -> None:
        """Take this copy of `key` out of the map (a deferred own hash may not be there)."""
        cached = self.cached
        copies = cached.get(key)
        if copies is None or copies == block:
            if copies is not None:
                del cached[key]
                self._num_own -= self.defer_own and key < 0
        elif isinstance(copies, dict) and block in copies:
            del copies[block]
            if len(copies) == 1:
                cached[key] = next(iter(copies))
                self._num_multi -= 1

    def touch(self, blocks: Iterable[int]) -> None:
        """Take a reference on prefix-cache hits, pulling free ones out of the free queue."""
        ref_cnt = self.ref_cnt
        for block in blocks:
            if ref_cnt[block] == 0:
                self.free_queue.remove_hashed(block)
            ref_cnt[block] += 1

    def take(self, blocks: list[int]) -> None:
        """Take these (unhashed, free) blocks out of the free queue: a contiguous reservation."""
        self.free_queue.remove_unhashed(set(blocks))
        for block in blocks:
            self.ref_cnt[block] = 1

    def free_blocks(self, ordered: list[int]) -> None:
        """Drop one reference from each block; `ordered` is a block table reversed (tail first)."""
        ref_cnt = self.ref_cnt
        for block in ordered:
            ref_cnt[block] -= 1
        if NULL_BLOCK in ordered or any(map(ref_cnt.__getitem__, ordered)):
            released = [b for b in ordered if not ref_cnt[b] and b != NULL_BLOCK]
        else:
            released = ordered  # (the common case: no block shared, every one released)
        self.freed += released
        keys = list(map(self.block_hash.__getitem__, released))
        num_unhashed = keys.count(None)
        if keys[:num_unhashed].count(None) == num_unhashed:  # (as a table's, tail first:
            # its unhashed tail leads; each check and split at C speed)
            unhashed, hashed = released[:num_unhashed], released[num_unhashed:]
        else:
            unhashed = [b for b, key in zip(released, keys, strict=True) if key is None]
            hashed = [b for b, key in zip(released, keys, strict=True) if key is not None]
        self.free_queue.push_head(unhashed)
        # a free block is taken out of the middle only as a prefix-cache hit, found through
        # the map; with the map empty none of these can be (a hash joins it on a held block)
        self.free_queue.push_tail(hashed, indexed=bool(self.cached))

    def cache_blocks(self, blocks: list[int], hashes: list[BlockHash], request_id: str,
                     emit: bool = True) -> None:
        """Give full blocks their hashes; `emit=False` leaves the 'stored' event to the caller
        (a decode stretch, whose records say which step stored what)."""
        block_hash = self.block_hash
        for block, key in zip(blocks, hashes, strict=True):
            block_hash[block] = key
        if emit and self.record_events:
            self.events.append(BlockEvent("stored", tuple(blocks), request_id))
        if self.kv_event_queue is not None:
            self._publish("stored", hashes)
        if self.defer_own and hashes and min(hashes) < 0:  # the own ones wait (see above)
            if max(hashes) < 0:
                return
            shared = [(block, key) for block, key in zip(blocks, hashes, strict=True)
                      if key >= 0]
            blocks, hashes = [block for block, _ in shared], [key for _, key in shared]
        if self.cached.keys().isdisjoint(hashes):  # the common case: no copies
            self.cached.update(zip(hashes, blocks, strict=True))
        else:
            for block, key in zip(blocks, hashes, strict=True):
                self._add_copy(block, key)

    def _add_copy(self, block: int, key: BlockHash) -> None:
        cached = self.cached
        copies = cached.get(key)
        if copies is None:
            cached[key] = block
            self._num_own += self.defer_own and key < 0
        elif isinstance(copies, int):
            if copies != block:
                cached[key] = {copies: None, block: None}
                self._num_multi += 1
        else:
            copies.setdefault(block, None)

    def publish_own(self, blocks: list[int]) -> None:
        """Put these blocks' deferred own hashes in the map (their request was preempted)."""
        if self.defer_own:
            block_hash = self.block_hash
            for block in blocks:
                key = block_hash[block]
                if key is not None and key < 0:
                    self._add_copy(block, key)

    def lookup(self, block_hash: BlockHash) -> int | None:
        """The first cached copy of this hash, or None."""
        copies = self.cached.get(block_hash)
        if copies is None or isinstance(copies, int):
            return copies
        return next(iter(copies))

    def copies(self, block_hash: BlockHash) -> list[int]:
        copies = self.cached.get(block_hash)
        if copies is None:
            return []
        return [copies] if isinstance(copies, int) else list(copies)

    def _publish(self, kind: str, hashes: Sequence[BlockHash | None]) -> None:
        """Queue a KV event of the shared hashes among `hashes`, hashed blocks' (none: no
        event). (Most events would be empty, every hash a request's own: one C-speed max
        tells, before any tuple is built.)"""
        # (hashed blocks' keys: no None. Not typing.cast: a Python call, on every block
        # cached or evicted while someone subscribes)
        keys: Sequence[BlockHash] = hashes  # type: ignore[assignment]
        if keys and max(keys) >= 0 and self.kv_event_queue is not None:
            self.kv_event_queue.append((kind, tuple(key for key in keys if key >= 0)))

    def tell_evictions(self, num_blocks: int) -> None:
        """Publish now the 'removed' events of the first `num_blocks` hashed free blocks (the
        next evicted, in free-queue order), for steps planned but not applied that will take
        them (core/planned_stretch.py); once evicted they publish nothing more."""
        if num_blocks > self.num_told and self.kv_event_queue is not None:
            blocks = self.free_queue.peek_hashed(self.num_told, num_blocks)
            self._publish("removed", list(map(self.block_hash.__getitem__, blocks)))
            self.num_told = num_blocks

    def take_kv_events(self) -> list[KVEvent]:
        """The KV events queued since the last call (subscribed: kv_event_queue is a list)."""
        events = self.kv_event_queue or []
        if self.kv_event_queue is not None:
            self.kv_event_queue = []
        return events

    def drain(self) -> tuple[list[PendingEvent], list[int]]:
        events, freed = self.events, self.freed
        self.events, self.freed = [], []
        return events, freed


def block_events(pending: list[PendingEvent]) -> tuple[BlockEvent, ...]:
    """The events a record carries, each block of a pending 'removed' list its own event."""
    if all(isinstance(event, BlockEvent) for event in pending):
        return tuple(cast(list[BlockEvent], pending))
    new = tuple.__new__  # BlockEvent's own __new__ costs a Python call per block
    events: list[BlockEvent] = []
    for event in pending:
        if isinstance(event, BlockEvent):
            events.append(event)
        else:
            events += [new(BlockEvent, ("removed", (block,), None)) for block in event]
    return tuple(events)
