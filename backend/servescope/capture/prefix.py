"""Recovering shared prompt prefixes from vLLM's chained block hashes, as RequestSpec segments.

Chained hashes form a trie: two prompts share block i exactly when they share blocks 0..i.
A request's prefix is its leading run of blocks that some other request also holds, cut into
segments wherever the set of requests sharing it changes; a segment is named by the hash of
its last block, so requests that share a segment name it alike. With lookahead hashes (an
EAGLE-family drafter with prefix caching) a shared block also shares the tokens after it, so
the first segment is that many tokens longer (vllm/v1/core/kv_cache_utils.py
get_request_block_hasher).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence


def prefix_segments(prompt_hashes: Mapping[str, Sequence[bytes]], block_size: int,
                    num_hash_lookahead_tokens: int = 0) -> dict[str, list[tuple[str, int]]]:
    """{request id: [(segment key, num_tokens), ...]} for requests sharing leading blocks.
    Segment boundaries sit num_hash_lookahead_tokens past the block boundaries: n shared
    blocks prove n * block_size + num_hash_lookahead_tokens shared tokens."""
    holders = Counter(h for hashes in prompt_hashes.values() for h in set(hashes))
    segments: dict[str, list[tuple[str, int]]] = {}
    for rid, hashes in prompt_hashes.items():
        shared = 0
        while shared < len(hashes) and holders[hashes[shared]] > 1:
            shared += 1
        out: list[tuple[str, int]] = []
        first = 0
        for i in range(shared):
            if i == shared - 1 or holders[hashes[i + 1]] != holders[hashes[i]]:
                extra = 0 if out else num_hash_lookahead_tokens
                out.append((_key(hashes[i]), (i + 1 - first) * block_size + extra))
                first = i + 1
        if out:
            segments[rid] = out
    return segments


def _key(block_hash: bytes | int) -> str:
    raw = block_hash if isinstance(block_hash, bytes) else str(block_hash).encode()
    return raw.hex()[:16]
