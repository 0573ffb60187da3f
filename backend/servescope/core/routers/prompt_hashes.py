"""A router's prompt block hashes, each shared prefix's full blocks hashed once.

core/prefix.py hashes a block from the tokens it holds alone (a shared segment's token is
(segment key, offset)), so the full blocks that lie wholly inside a prompt's shared segments
hash alike for every prompt that opens with the same segments. A prefix-aware router hashes
every prompt it routes (core/routers/llm_d.py); with a few tenants' system prompts most of
that work is those same blocks again. PromptHashes keeps them per prefix (the most seen) and
starts each prompt's hashing past them: its hasher goes on from a request's block_hashes, so
the values are prompt_block_hashes's (tests/core/test_prompt_hashes.py).
"""

from __future__ import annotations

from servescope.core.block_pool import BlockHash
from servescope.core.prefix import BlockHasher
from servescope.core.request import Request, RequestSpec

# Prefixes kept at once: a tenants workload has a few; a trace whose every prompt has its own
# chain of hash ids (Mooncake's) would otherwise keep a list per request. Past it the memo
# starts over (it only saves work).
MAX_PREFIXES = 1024


class PromptHashes:
    """prompt_block_hashes at `block_size` (no lookahead), a memo of shared prefixes."""

    def __init__(self, block_size: int) -> None:
        self.block_size = block_size
        self.hasher = BlockHasher(block_size)  # its own memo: a block's key -> hash
        self.shared: dict[tuple[tuple[str, int], ...], list[BlockHash]] = {}

    def of(self, spec: RequestSpec) -> tuple[BlockHash, ...]:
        num_blocks = spec.prompt_len // self.block_size
        request = Request(spec, 0, 0.0)
        prefix = spec.prefix
        if not prefix:
            return tuple(self.hasher.hashes(request, num_blocks)[:num_blocks])
        # the full blocks wholly inside the shared segments (clipped to the prompt)
        num_shared = min(sum(length for _, length in prefix), spec.prompt_len) // self.block_size
        known = self.shared.get(prefix, [])
        request.block_hashes += known[:num_shared]
        hashes = self.hasher.hashes(request, num_blocks)
        if num_shared > len(known):
            if len(self.shared) >= MAX_PREFIXES:
                self.shared.clear()
            self.shared[prefix] = hashes[:num_shared]
        return tuple(hashes[:num_blocks])
