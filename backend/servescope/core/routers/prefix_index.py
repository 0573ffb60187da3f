"""Where a router believes each prompt block is cached: llm-d's two prefix indexes.

ApproxIndex is llm-d-inference-scheduler's approximate one (pkg/epp/framework/plugins/
requestcontrol/dataproducer/approximateprefix/indexer.go, commit 520af478): the hashes the router
itself sent to each replica, in an LRU per replica whose capacity is the replica's number of KV
blocks (autoTune, from its cache metrics) or `lruCapacityPerServer`; evicting a hash from a
replica's LRU forgets that replica for it. EventIndex is the precise one (llm-d-kv-cache's
kvblock index, fed by vLLM's KV events as the precise-prefix-cache-scorer subscribes to them;
Dynamo's KV router keeps the same radix of stored blocks): a block is on a replica between its
BlockStored and BlockRemoved events. Counted, since a replica can hold two copies of a hash.

Both answer `match`, llm-d's matchLongestPrefix (approximateprefix/plugin.go): walk the
prompt's hashes in order, stop at the first no replica holds, and count for each replica the
hashes it holds up to there (`matched`: the counts of the replicas that hold any).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter, OrderedDict, deque
from collections.abc import Mapping, Sequence
from functools import lru_cache
from itertools import chain, compress, count, filterfalse, repeat, takewhile
from operator import eq, or_


@lru_cache(maxsize=1024)
def members(holders: int) -> tuple[int, ...]:
    """The replicas in a holder mask (bit r: replica r holds the hash), lowest first. (A
    fleet's masks repeat: the few sets of replicas holding each tenant's prompt.)"""
    bits = bin(holders)[:1:-1]  # bit 0 first
    return tuple(compress(count(), map(eq, bits, repeat("1"))))


def longest_prefix_holders(hashes: Sequence[int], replicas_of: Mapping[int, int]
                           ) -> dict[int, int]:
    """Matched blocks per replica that matched any, greedily from the first block (see the
    module docstring), from each hash's holder mask. (At C speed: most walks meet one mask
    all the way, a tenant's prompt on the replicas that hold it whole.)"""
    walk = list(takewhile(bool, map(replicas_of.get, hashes)))
    if not walk:
        return {}
    if walk.count(walk[0]) == len(walk):
        return dict.fromkeys(members(walk[0]), len(walk))
    return Counter(chain.from_iterable(map(members, walk)))


def dense(matched: Mapping[int, int], num_replicas: int) -> list[int]:
    """Matched blocks for every replica (0 where none)."""
    counts = [0] * num_replicas
    for replica, num in matched.items():
        counts[replica] = num
    return counts


class HolderIndex:
    """What both indexes answer from which replicas hold each hash (`replicas_of`)."""

    num_replicas: int
    replicas_of: dict[int, int]  # hash -> its holders' mask (bit r: replica r)

    def match(self, hashes: Sequence[int]) -> list[int]:
        return dense(self.matched(hashes), self.num_replicas)

    def matched(self, hashes: Sequence[int]) -> dict[int, int]:
        return longest_prefix_holders(hashes, self.replicas_of)


class ApproxIndex(HolderIndex):
    """Per-replica LRUs of the block hashes the router sent there.

    An LRU that evicts its oldest after each hash added holds, after a send, the `capacity`
    most recently sent of its hashes: so a send moves all its hashes to the LRU's young end
    (an OrderedDict per replica: C-speed moves), then the oldest go. A send's trailing own
    hashes (negative: core/prefix.py, one request's private tokens) are only counted: no
    other prompt holds them, so no walk can reach them and nothing sends them again; they
    take LRU room all the same, as one entry after the send's other hashes, keyed
    ("own", send number) and valued how many of them are left (a named hash's value: 0)."""

    def __init__(self, num_replicas: int) -> None:
        self.num_replicas = num_replicas
        self.lrus: list[OrderedDict[int | tuple[str, int], int]] = [
            OrderedDict() for _ in range(num_replicas)]
        self.sizes = [0] * num_replicas  # hashes in each LRU, named and own
        self.num_sends = 0
        self.replicas_of: dict[int, int] = {}

    def add(self, replica: int, hashes: Sequence[int], capacity: int) -> None:
        """indexer.Add: each hash becomes the replica's most recent; the LRU's oldest go."""
        if not hashes:
            return
        cut = bisect_left(hashes, True, key=(0).__gt__)  # the first own (h < 0): they trail
        named = hashes[:cut]
        lru, replicas_of = self.lrus[replica], self.replicas_of
        # the hashes new to this replica, and their holders' masks with it (at C speed)
        new = list(filterfalse(lru.__contains__, named))
        holders = map(or_, map(replicas_of.get, new, repeat(0)), repeat(1 << replica))
        replicas_of.update(zip(new, holders, strict=True))
        before = len(lru)
        lru.update(zip(new, repeat(0)))
        self.sizes[replica] += len(lru) - before  # (a hash sent twice in one prompt: once)
        deque(map(lru.move_to_end, named), 0)  # (in order, at C speed)
        own = len(hashes) - cut
        if own:
            self.num_sends += 1
            lru[("own", self.num_sends)] = own
        self.sizes[replica] += own
        if self.sizes[replica] > capacity:
            self._evict(replica, capacity)

    def _evict(self, replica: int, capacity: int) -> None:
        """The replica's least recently sent hashes, until `capacity` remain."""
        lru, size = self.lrus[replica], self.sizes[replica]
        while size > capacity:
            oldest = next(iter(lru))
            own = lru[oldest]
            if not own:
                del lru[oldest]
                size -= 1
                assert isinstance(oldest, int)
                forget(self.replicas_of, oldest, replica)
            elif own > size - capacity:  # own hashes: as many as must go
                lru[oldest] = own - (size - capacity)
                size = capacity
            else:
                del lru[oldest]
                size -= own
        self.sizes[replica] = size


class EventIndex(HolderIndex):
    """Per-replica counts of the block hashes its KV events say it holds."""

    def __init__(self, num_replicas: int) -> None:
        self.num_replicas = num_replicas
        self.copies: list[Counter[int]] = [Counter() for _ in range(num_replicas)]
        self.replicas_of: dict[int, int] = {}

    def apply(self, replica: int, kind: str, hashes: Sequence[int]) -> None:
        """One event: "stored" adds a copy of each hash, "removed" takes one away."""
        copies, replicas_of, bit = self.copies[replica], self.replicas_of, 1 << replica
        for block_hash in hashes:
            if kind == "stored":
                copies[block_hash] += 1
                replicas_of[block_hash] = replicas_of.get(block_hash, 0) | bit
            elif copies[block_hash] > 0:  # a removal of a block stored before we listened
                copies[block_hash] -= 1
                if not copies[block_hash]:
                    del copies[block_hash]
                    forget(replicas_of, block_hash, replica)


def forget(replicas_of: dict[int, int], block_hash: int, replica: int) -> None:
    """`replica` no longer holds `block_hash` (the hash leaves the index with its last holder)."""
    holders = replicas_of[block_hash] & ~(1 << replica)
    if holders:
        replicas_of[block_hash] = holders
    else:
        del replicas_of[block_hash]
