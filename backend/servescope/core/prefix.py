"""Chained block hashes for prefix caching, interned to small deterministic integers.

A full block's key is (parent key, the token streams it covers). Tokens of a shared prefix
segment are identified by (segment key, offset), every other token by (request id, position),
so two requests share block i exactly when their first (i + 1) blocks hold the same tokens.
"""

from __future__ import annotations

from servescope.core.request import Request

Piece = tuple[str, str, int, int]  # (kind, key, first offset, end offset)


class BlockHasher:
    def __init__(self, block_size: int) -> None:
        self.block_size = block_size
        self._ids: dict[tuple[int, tuple[Piece, ...]], int] = {}

    def hashes(self, request: Request, num_blocks: int) -> list[int]:
        """The hashes of the request's first `num_blocks` full blocks (extended lazily)."""
        hashes = request.block_hashes
        while len(hashes) < num_blocks:
            parent = hashes[-1] if hashes else 0
            pieces = self._pieces(request, len(hashes))
            hashes.append(self._ids.setdefault((parent, pieces), len(self._ids) + 1))
        return hashes

    def _pieces(self, request: Request, index: int) -> tuple[Piece, ...]:
        start = index * self.block_size
        end = start + self.block_size
        pieces: list[Piece] = []
        seg_start = 0
        for key, length in request.spec.prefix:
            seg_end = min(seg_start + length, request.prompt_len)
            lo, hi = max(start, seg_start), min(end, seg_end)
            if lo < hi:
                pieces.append(("p", key, lo - seg_start, hi - seg_start))
            seg_start = seg_end
        covered = sum(p[3] - p[2] for p in pieces)
        if covered < self.block_size:
            pieces.append(("u", request.id, start + covered, end))
        return tuple(pieces)
