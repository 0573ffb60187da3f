"""Invariants that must hold after every engine step; tests call check_invariants each step."""

from __future__ import annotations

from collections import Counter

from servescope.core.block_pool import NULL_BLOCK
from servescope.core.records import StepRecord
from servescope.core.scheduler.base import Scheduler


class InvariantError(AssertionError):
    pass


def check_invariants(scheduler: Scheduler, record: StepRecord) -> None:
    kv = scheduler.kv
    pool = kv.pool
    references: Counter[int] = Counter()
    for table in kv.tables.values():
        references.update(table)
    free = set(pool.free_queue)
    _expect(NULL_BLOCK not in free and NULL_BLOCK not in references, "null block handed out")
    _expect(len(free) == len(pool.free_queue), "a block is twice in the free queue")
    used = {b for b in range(1, pool.num_gpu_blocks) if pool.ref_cnt[b] > 0}
    _expect(len(free) + len(used) == pool.num_usable_blocks,
            f"free {len(free)} + used {len(used)} != usable {pool.num_usable_blocks}")
    _expect(not free & set(references), "a free block is referenced by a block table")
    for block in range(1, pool.num_gpu_blocks):
        _expect(pool.ref_cnt[block] == references[block],
                f"block {block}: ref count {pool.ref_cnt[block]} != {references[block]} references")
    _expect(references.total() == kv.num_table_blocks,
            "num_table_blocks out of step with the block tables")
    _expect(record.num_scheduled_tokens <= record.token_budget, "token budget exceeded")
    _expect(len(record.running) <= record.max_num_seqs, "max_num_seqs exceeded")
    # Paged allocation without lookahead: a running request holds exactly its computed blocks
    # (with speculation at least those: lookahead slots and rejected drafts' blocks stay).
    spec = scheduler.config.speculative
    on_demand = scheduler.config.allocator == "paged" and scheduler.config.policy != "static"
    if spec is not None:
        _check_drafts(record, spec.num_speculative_tokens)
    for request in scheduler.requests.values():
        # (async scheduling) tokens in flight are computed before they are sampled
        _expect(request.num_computed_tokens <= request.num_tokens + request.num_output_placeholders,
                f"{request.id}: num_computed_tokens > num_tokens")
        held = len(kv.tables.get(request.id, []))
        _expect(held * kv.block_size >= request.num_computed_tokens,
                f"{request.id}: computed tokens without KV blocks")
        if on_demand and spec is None and request in scheduler.running:
            needed = -(-request.num_computed_tokens // kv.block_size)
            _expect(held == needed, f"{request.id}: holds {held} blocks, on demand needs {needed}")
    for block_hash in pool.cached:
        copies = pool.copies(block_hash)
        _expect(len(set(copies)) == len(copies), f"hash {block_hash!r} lists a block twice")
        for block in copies:
            _expect(pool.block_hash[block] == block_hash, f"cache map stale for block {block}")


def _check_drafts(record: StepRecord, k: int) -> None:
    """Each entry's drafts within K and inside its n (a decode is 1 + drafts); accepted
    within drafts."""
    drafts, accepted = record.drafts or {}, record.accepted or {}
    for entry in record.scheduled:
        d = drafts.get(entry.id, 0)
        _expect(0 <= d <= k and d < entry.n, f"{entry.id}: {d} drafts in {entry.n} (K {k})")
        _expect(-1 <= accepted.get(entry.id, -1) <= d, f"{entry.id}: accepted more than drafted")


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise InvariantError(message)
