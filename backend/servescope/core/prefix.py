"""Chained block hashes for prefix caching, derived from the blocks' contents alone.

A full block's key is (parent key, the token streams it covers). Tokens of a shared prefix
segment are identified by (segment key, offset), every other token by (request id, position),
so two requests share block i exactly when their first (i + 1) blocks hold the same tokens,
and, with lookahead hashes (an EAGLE-family drafter), the num_hash_lookahead_tokens after them
(vllm/v1/core/kv_cache_utils.py get_request_block_hasher, vLLM 0.33).

The value is a digest of the key, as vLLM's sha256 block hash is, so every engine of a fleet and
a router (`prompt_block_hashes`) compute the same hash for the same tokens without sharing state
(llm-d's prefix scorers and Dynamo's KV router match the hashes replicas report the same way).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

from servescope.core.block_pool import BlockHash
from servescope.core.request import Request, RequestSpec

Piece = tuple[str, str, int, int]  # (kind, key, first offset, end offset)
OWN_SHIFT = 32
# 8-byte digests: a shared block's hash takes 63 bits (positive; 0 is "no parent"), an own
# key 62; a collision among a million distinct keys has odds of about 1e-7
_DIGEST_BYTES = 8


def _digest(text: str, bits: int) -> int:
    """A deterministic integer in [1, 2**bits) from `text` (no PYTHONHASHSEED dependence)."""
    raw = hashlib.blake2b(text.encode(), digest_size=_DIGEST_BYTES).digest()
    return (int.from_bytes(raw, "little") >> (8 * _DIGEST_BYTES - bits)) or 1


def prompt_block_hashes(spec: RequestSpec, block_size: int, num_hash_lookahead_tokens: int = 0,
                        hasher: BlockHasher | None = None) -> tuple[BlockHash, ...]:
    """The hashes of the prompt's full blocks (those hashable before any output: their
    lookahead tokens are prompt tokens too), equal to the ones an engine's prefix cache gives
    the same request. `hasher` (same block size and lookahead) only memoizes: pass one kept
    across calls to hash a shared prefix once."""
    if hasher is None:
        hasher = BlockHasher(block_size, num_hash_lookahead_tokens)
    assert (hasher.block_size, hasher.num_hash_lookahead_tokens) == (
        block_size, num_hash_lookahead_tokens), "a memo hasher of another block layout"
    num_blocks = max(0, spec.prompt_len - num_hash_lookahead_tokens) // block_size
    return tuple(hasher.hashes(Request(spec, 0, 0.0), num_blocks)[:num_blocks])


class BlockHasher:
    def __init__(self, block_size: int, num_hash_lookahead_tokens: int = 0) -> None:
        self.block_size = block_size
        self.num_hash_lookahead_tokens = num_hash_lookahead_tokens
        self._ids: dict[tuple[BlockHash, tuple[Piece, ...]], int] = {}  # memo: key -> hash
        # a request's first hashes computed already by a hasher of the same layout (a fleet's
        # router, core/fleet.py), by request id: its first hashing takes them
        self.given: dict[str, tuple[BlockHash, ...]] = {}

    def give(self, request_id: str, hashes: tuple[BlockHash, ...]) -> None:
        """Hashes of the request's first blocks, from a hasher of this block size and
        lookahead: hashed here, the request starts from them instead of from block 0."""
        self.given[request_id] = hashes

    def hashes(self, request: Request, num_blocks: int) -> list[BlockHash]:
        """The hashes of the request's first `num_blocks` full blocks (extended lazily), and
        maybe more: own blocks' hashes cost no digest, so they are extended at once up to the
        request's last full block (callers slice what they need)."""
        hashes = request.block_hashes
        if len(hashes) >= num_blocks:
            return hashes
        if not hashes and self.given:  # no more than asked for: a hit stops at num_blocks
            hashes.extend(self.given.pop(request.id, ())[:num_blocks])
            if len(hashes) >= num_blocks:
                return hashes
        if hashes and hashes[-1] < 0:  # own blocks hashed already (past any shared ones):
            first, num = hashes[-1] - 1, len(hashes)  # go on from the last (_extend_own)
            hashes.extend(range(first, first - (self.own_end(request, num_blocks) - num), -1))
            return hashes
        if not request.spec.prefix:  # no shared segment: every block is the request's own
            return self._extend_own(request, hashes, num_blocks, 0)
        ids, size = self._ids, self.block_size
        shared = min(sum(length for _, length in request.spec.prefix), request.prompt_len)
        pieces = self._pieces(request, len(hashes))
        while len(hashes) < num_blocks and len(hashes) * size < shared:
            parent = hashes[-1] if hashes else 0
            key = (parent, next(pieces))
            value = ids.get(key)
            if value is None:
                value = ids[key] = _digest(repr(key), 63)
            hashes.append(value)
        if len(hashes) >= num_blocks:
            return hashes
        # Past the shared segments a block holds only the request's own tokens: its key is
        # (the last shared block's hash, request id, block index). It names the same chain of
        # tokens the (parent, pieces) key would, and costs one digest a request.
        return self._extend_own(request, hashes, num_blocks, self.shared_base(hashes, shared))

    def _extend_own(self, request: Request, hashes: list[BlockHash], num_blocks: int,
                    base: int) -> list[BlockHash]:
        """Own block i of (base, request id) hashes to -(K << 32) - i, K a 62-bit digest of
        (base, request id): negative, so never a shared block's hash, and distinct for
        i < 2**32."""
        num = len(hashes)  # (no own block hashed yet: hashes() goes on from one itself)
        key = _digest(f"{base}/{request.id}", 62)
        first = -(key << OWN_SHIFT) - num
        hashes.extend(range(first, first - (self.own_end(request, num_blocks) - num), -1))
        return hashes

    def own_end(self, request: Request, num_blocks: int) -> int:
        """How many hashes an extension of own ones makes: the `num_blocks` asked for, or
        all of the request's full blocks (prompt and output: a decode asks for one more each
        block, and each ask costs more than the values)."""
        return max(num_blocks, (request.prompt_len + request.output_len) // self.block_size)

    def shared_base(self, hashes: list[BlockHash], shared: int) -> int:
        """The hash of the last block that holds shared-segment tokens (0: none)."""
        index = -(-shared // self.block_size) - 1
        value = hashes[index] if index >= 0 else 0
        assert isinstance(value, int)
        return value

    def _pieces(self, request: Request, index: int) -> Iterator[tuple[Piece, ...]]:
        """The token streams of blocks index, index + 1, ...: each block (and its lookahead)
        as pieces of the prefix segments it overlaps, then the request's own tokens. One walk
        over blocks and segments together (a segment that ends before a block ends before
        every later block), so hashing a prompt is linear in its blocks and segments."""
        span = self.block_size + self.num_hash_lookahead_tokens  # a block and its lookahead
        segments: list[tuple[str, int, int]] = []  # (key, first token, end), clipped
        seg_start = 0
        for key, length in request.spec.prefix:
            seg_end = min(seg_start + length, request.prompt_len)
            if seg_start < seg_end:
                segments.append((key, seg_start, seg_end))
            seg_start = seg_end
        first = 0  # the first segment that ends after the current block's start
        while True:
            start = index * self.block_size
            end = start + span
            while first < len(segments) and segments[first][2] <= start:
                first += 1
            pieces: list[Piece] = []
            covered = 0
            for key, seg_start, seg_end in segments[first:]:
                if seg_start >= end:
                    break
                lo, hi = max(start, seg_start), min(end, seg_end)
                pieces.append(("p", key, lo - seg_start, hi - seg_start))
                covered += hi - lo
            if covered < span:
                pieces.append(("u", request.id, start + covered, end))
            yield tuple(pieces)
            index += 1
