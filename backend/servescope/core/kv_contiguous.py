"""Contiguous KV reservations, the allocators PagedAttention replaced (Orca Max, Pow2, Oracle).

Each request reserves one contiguous run of blocks at admission and keeps it to the end; the runs
come from a buddy allocator, as PagedAttention's authors assume for Orca, so a run is a power of
two of blocks:

    | r0 tokens | r0 reserved ...... | r0 internal | free (external) | r1 tokens | r1 ... |

`max` reserves max_model_len tokens, `pow2` the prompt plus the next power of two of the output
("if the true output length is 25, it reserves 32 positions for outputs", §6.1), `oracle`
exactly the real length, known in advance; the buddy allocator rounds each up to its chunk.
"""

from __future__ import annotations

from servescope.core.block_pool import BlockPool
from servescope.core.buddy import BuddyArena
from servescope.core.request import Request
from servescope.core.running_batch import RunningBatch

DEFAULT_MAX_LEN = 2048  # Orca (Max) in PagedAttention's Fig. 2 reserves 2048 tokens


class ContiguousKVCacheManager:
    enable_caching = False
    on_demand = False

    def __init__(self, num_gpu_blocks: int, block_size: int, allocator: str,
                 max_model_len: int | None) -> None:
        self.block_size = block_size
        self.allocator = allocator
        self.max_model_len = max_model_len or DEFAULT_MAX_LEN
        self.pool = BlockPool(num_gpu_blocks, enable_caching=False)
        self.tables: dict[str, list[int]] = {}
        self.arena = BuddyArena(1, num_gpu_blocks - 1)  # block 0 is the null block
        # Running sums over reservations, for waste() in O(1): slots up to the real length,
        # and slots beyond it (internal fragmentation).
        self._usable_slots = 0
        self._beyond_slots = 0
        self._slots: dict[str, tuple[int, int]] = {}
        self.num_table_blocks = 0
        self._top = 1  # one past the highest reserved block

    @property
    def num_free_blocks(self) -> int:
        return self.pool.num_free_blocks

    def reservation_tokens(self, prompt_len: int, output_len: int) -> int:
        """Token slots the request's buddy chunk holds."""
        real = prompt_len + output_len
        if self.allocator == "max":
            wanted = max(self.max_model_len, real)
        elif self.allocator == "pow2":
            wanted = prompt_len + (1 << (output_len - 1).bit_length())
        else:
            wanted = real
        return self._chunk_blocks(wanted) * self.block_size

    def _chunk_blocks(self, num_tokens: int) -> int:
        return 1 << (-(-num_tokens // self.block_size) - 1).bit_length()

    def get_computed_blocks(self, request: Request) -> list[int]:
        return []

    def cache_full_blocks(self, request: Request, num_tokens: int) -> None:
        """Contiguous reservations are never shared, so nothing is cached."""

    def allocate_slots(self, request: Request, num_new_tokens: int,
                       computed: list[int] | None = None, reserve_full: bool = False,
                       watermark: bool = False, num_lookahead_tokens: int = 0,
                       delay_cache_blocks: bool = False,
                       ) -> list[int] | None:
        if request.id in self.tables:
            return []  # the reservation made at admission already covers every token
        tokens = self.reservation_tokens(request.prompt_len, request.output_len)
        return self.reserve(request, tokens)

    def reserve(self, request: Request, num_tokens: int) -> list[int] | None:
        """The buddy chunk for `num_tokens`, or None while no free chunk is big enough."""
        count = self._chunk_blocks(num_tokens)
        first = self.arena.take(count.bit_length() - 1)
        if first is None:
            return None
        blocks = list(range(first, first + count))
        self.pool.take(blocks)
        self.tables[request.id] = blocks
        self._count(request, count * self.block_size, +1)
        self.num_table_blocks += count
        self._top = max(self._top, first + count)
        return blocks

    def num_fitting(self, num_tokens: int) -> int:
        """How many reservations of `num_tokens` the free chunks hold now: a free chunk of
        order k holds 2**(k - order) of them, smaller chunks none."""
        order = self._chunk_blocks(num_tokens).bit_length() - 1
        return sum(len(self.arena.free[k]) << (k - order)
                   for k in range(order, len(self.arena.free)))

    def _count(self, request: Request, slots: int, sign: int) -> None:
        real = request.prompt_len + request.output_len
        usable, beyond = min(slots, real), max(slots - real, 0)
        if sign > 0:
            self._slots[request.id] = (usable, beyond)
        else:
            usable, beyond = self._slots.pop(request.id)
        self._usable_slots += sign * usable
        self._beyond_slots += sign * beyond

    def append_blocks(self, request_ids: list[str]) -> list[int]:
        raise AssertionError("a contiguous reservation covers every token: no block to append")

    def free(self, request: Request) -> None:
        blocks = self.tables.pop(request.id, None)
        if not blocks:
            return
        self.pool.free_blocks(blocks[::-1])
        self.arena.give(blocks[0], len(blocks).bit_length() - 1)
        self._count(request, 0, -1)
        self.num_table_blocks -= len(blocks)
        if blocks[-1] + 1 == self._top:
            self._top = max((t[-1] + 1 for t in self.tables.values()), default=1)

    def waste(self, running: RunningBatch) -> dict[str, int]:
        """Token slots by PagedAttention Fig. 2 category, over the memory in use (up to the end of
        the highest reservation; free chunks below it are external fragmentation)."""
        states = running.total_computed()
        reserved = self._usable_slots - states
        internal = self._beyond_slots
        in_use = (self._top - 1) * self.block_size
        external = max(in_use - states - reserved - internal, 0)
        return {"token_states": states, "reserved": reserved,
                "internal_fragmentation": internal, "external_fragmentation": external}
