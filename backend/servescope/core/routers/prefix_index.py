"""Where a router believes each prompt block is cached: llm-d's two prefix indexes.

ApproxIndex is llm-d-inference-scheduler's approximate one (pkg/epp/framework/plugins/
requestcontrol/dataproducer/approximateprefix/indexer.go, commit 520af478): the hashes the router
itself sent to each replica, in an LRU per replica whose capacity is the replica's number of KV
blocks (autoTune, from its cache metrics) or `lruCapacityPerServer`; evicting a hash from a
replica's LRU forgets that replica for it. EventIndex is the precise one (llm-d-kv-cache's
kvblock index, fed by vLLM's KV events as the precise-prefix-cache-scorer subscribes to them;
Dynamo's KV router keeps the same radix of stored blocks): a block is on a replica between its
BlockStored and BlockRemoved events. Counted, since a replica can hold two copies of a hash.

Both answer `match`, llm-d's matchLongestPrefix (approximateprefix/plugin.go): walk the prompt's
hashes in order, stop at the first no replica holds, and count for each replica the hashes
it holds up to there.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Collection, Sequence


def match_longest_prefix(hashes: Sequence[int], holders: Callable[[int], Collection[int]],
                         num_replicas: int) -> list[int]:
    """Matched blocks per replica, greedily from the first block (see the module docstring)."""
    counts = [0] * num_replicas
    for block_hash in hashes:
        found = holders(block_hash)
        if not found:
            break
        for replica in found:
            counts[replica] += 1
    return counts


class ApproxIndex:
    """Per-replica LRUs of the block hashes the router sent there.

    An LRU that evicts its oldest after each hash added holds, after a send, the `capacity`
    most recently sent of its hashes: so a send touches all its hashes at once (C-speed dict
    updates), then the oldest go. Each hash sent is numbered (its use); a replica's
    `last_use` maps a hash to its latest use, and `sends` keeps its sends oldest first as
    (uses, hashes), `evicted` hashes into the oldest already passed: an entry whose hash was
    sent again since is stale, skipped when evicting."""

    def __init__(self, num_replicas: int) -> None:
        self.num_replicas = num_replicas
        self.last_use: list[dict[int, int]] = [{} for _ in range(num_replicas)]
        self.sends: list[deque[tuple[Sequence[int], Sequence[int]]]] = [
            deque() for _ in range(num_replicas)]
        self.evicted = [0] * num_replicas
        self.num_entries = [0] * num_replicas  # in sends, stale ones included
        self.num_uses = 0
        self.replicas_of: dict[int, set[int]] = {}

    def add(self, replica: int, hashes: Sequence[int], capacity: int) -> None:
        """indexer.Add: each hash becomes the replica's most recent; the LRU's oldest go."""
        if not hashes:
            return
        last_use, replicas_of = self.last_use[replica], self.replicas_of
        for block_hash in [h for h in hashes if h not in last_use]:
            holders = replicas_of.get(block_hash)
            if holders is None:
                replicas_of[block_hash] = {replica}
            else:
                holders.add(replica)
        uses = range(self.num_uses, self.num_uses + len(hashes))
        self.num_uses += len(hashes)
        last_use.update(zip(hashes, uses, strict=True))
        self.sends[replica].append((uses, hashes))
        self.num_entries[replica] += len(hashes)
        if len(last_use) > capacity:
            self._evict(replica, capacity)
        if self.num_entries[replica] > 2 * len(last_use) + 64:  # mostly stale: compact
            live = sorted((u, h) for h, u in last_use.items())
            self.sends[replica] = deque([(tuple(u for u, _ in live), tuple(h for _, h in live))])
            self.evicted[replica], self.num_entries[replica] = 0, len(live)

    def _evict(self, replica: int, capacity: int) -> None:
        """The replica's least recently sent hashes, until `capacity` remain."""
        last_use, sends = self.last_use[replica], self.sends[replica]
        k = self.evicted[replica]
        while len(last_use) > capacity:
            uses, hashes = sends[0]
            gone, use = hashes[k], uses[k]
            k += 1
            if k == len(hashes):
                sends.popleft()
                self.num_entries[replica] -= k
                k = 0
            if last_use.get(gone) == use:
                del last_use[gone]
                forget(self.replicas_of, gone, replica)
        self.evicted[replica] = k

    def match(self, hashes: Sequence[int]) -> list[int]:
        return match_longest_prefix(hashes, lambda h: self.replicas_of.get(h, ()),
                                    self.num_replicas)


class EventIndex:
    """Per-replica counts of the block hashes its KV events say it holds."""

    def __init__(self, num_replicas: int) -> None:
        self.num_replicas = num_replicas
        self.copies: list[Counter[int]] = [Counter() for _ in range(num_replicas)]
        self.replicas_of: dict[int, set[int]] = {}

    def apply(self, replica: int, kind: str, hashes: Sequence[int]) -> None:
        """One event: "stored" adds a copy of each hash, "removed" takes one away."""
        copies = self.copies[replica]
        for block_hash in hashes:
            if kind == "stored":
                copies[block_hash] += 1
                self.replicas_of.setdefault(block_hash, set()).add(replica)
            elif copies[block_hash] > 0:  # a removal of a block stored before we listened
                copies[block_hash] -= 1
                if not copies[block_hash]:
                    del copies[block_hash]
                    forget(self.replicas_of, block_hash, replica)

    def match(self, hashes: Sequence[int]) -> list[int]:
        return match_longest_prefix(hashes, lambda h: self.replicas_of.get(h, ()),
                                    self.num_replicas)


def forget(replicas_of: dict[int, set[int]], block_hash: int, replica: int) -> None:
    """`replica` no longer holds `block_hash` (the hash leaves the index with its last holder)."""
    holders = replicas_of[block_hash]
    holders.discard(replica)
    if not holders:
        del replicas_of[block_hash]
