"""A replica's prefix cache as the KV events a router subscribes to (vLLM's BlockStored /
BlockRemoved over ZMQ, vllm/distributed/kv_events.py, which llm-d's precise scorer and Dynamo's
KV router index): at each scrape, the hashes cached since the last one and those gone since.

Events between two scrapes reach the router together, at the scrape: a block stored and evicted
in between is never heard of, as a subscriber that polls no more often would miss nothing it
could still find. The router may delay them further (core/routers/llm_d.py kv_event_delay_ms).
"""

from __future__ import annotations

from servescope.core.block_pool import BlockPool

KVEvent = tuple[str, tuple[int, ...]]  # ("stored" | "removed", block hashes)


class CacheFeed:
    """What each replica's cache map held at the last look."""

    def __init__(self, num_replicas: int) -> None:
        self.known: list[set[int]] = [set() for _ in range(num_replicas)]

    def changes(self, replica: int, pool: BlockPool) -> list[KVEvent]:
        """The replica's cache changes since the last call, as events (none: [])."""
        now = pool.cached.keys()
        known = self.known[replica]
        stored = tuple(h for h in now if h not in known)
        removed = tuple(sorted(h for h in known if h not in now))
        if not stored and not removed:
            return []
        self.known[replica] = set(now)
        return [kind for kind in (("removed", removed), ("stored", stored)) if kind[1]]
