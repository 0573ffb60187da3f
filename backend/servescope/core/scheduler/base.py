"""What every policy shares: the plan a step produces and the update that applies its outcome."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from servescope.core.config import EngineConfig
from servescope.core.decode_stretch import DecodeBlocks
from servescope.core.kv_cache_manager import KVCacheManager, PagedKVCacheManager
from servescope.core.kv_counting import CountingKVCacheManager
from servescope.core.records import ScheduledColumns, ScheduledEntry
from servescope.core.request import Request, RequestStatus
from servescope.core.running_batch import RunningBatch
from servescope.core.waiting_queue import WaitingQueue


@dataclass
class DecodeChunk:
    """Running-batch slots lo..hi-1, each scheduled for one decode token (the vector path)."""

    lo: int
    hi: int
    ids: list[str]
    start: np.ndarray


# which running rows a step may take as plain decodes (the vector path), by row
DecodeMask = np.ndarray | list[bool]


@dataclass
class SchedulerOutput:
    """One step's decision: who runs how many tokens, in scheduling order."""

    entries: list[ScheduledEntry | DecodeChunk] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    resumed: list[str] = field(default_factory=list)
    preempted: list[str] = field(default_factory=list)
    new_blocks: dict[str, tuple[int, ...]] = field(default_factory=dict)
    num_cached_tokens: dict[str, int] = field(default_factory=dict)
    # speculative decoding: drafts scheduled per request (counted in its n), the admissions
    # padded with placeholder drafts, and the drafts each verify accepted (set by the update)
    drafts: dict[str, int] = field(default_factory=dict)
    padded: set[str] = field(default_factory=set)
    accepted: dict[str, int] = field(default_factory=dict)

    _columns: ScheduledColumns | None = None

    @property
    def total_tokens(self) -> int:
        return int(self.columns().n.sum())

    def shape(self) -> tuple[list[int], list[int]]:
        """Each scheduled request's tokens and start, in order (what the step is priced from):
        columns() without the ids and flags a record needs, as plain lists."""
        n: list[int] = []
        start: list[int] = []
        for entry in self.entries:
            if isinstance(entry, DecodeChunk):
                n += [1] * (entry.hi - entry.lo)
                start += entry.start.tolist()
            else:
                n.append(entry.n)
                start.append(entry.start)
        return n, start

    def columns(self) -> ScheduledColumns:
        """The plan as columns, chunks and single entries joined in scheduling order."""
        if self._columns is None:
            self._columns = ScheduledColumns.join(
                [(e.ids, e.start) if isinstance(e, DecodeChunk) else e for e in self.entries])
        return self._columns


class Scheduler:
    """Shared state of a policy: queues, the KV cache manager and the sampling update."""

    policy_name: ClassVar[str] = ""  # set by each policy: its EngineConfig.policy value

    def __init__(self, config: EngineConfig, kv: KVCacheManager) -> None:
        self.config = config
        self.kv = kv
        self.running = RunningBatch()
        self.waiting = WaitingQueue()
        self.requests: dict[str, Request] = {}
        self.more_arrivals = True  # set by the engine; a policy that waits to fill a batch reads it
        self.now_s = 0.0  # the time clock, set by the engine before each schedule()
        self.released: list[str] = []  # whose block tables the last update freed
        self.spec = config.speculative  # None: no speculative decoding
        self.acceptance: Any = None  # the engine's acceptance model (core/acceptance.py)
        # P/D: a KV connector's scheduler side (core/kv_connector.py); None: no connector
        self.connector: Any = None

    def add_request(self, request: Request) -> None:
        self.requests[request.id] = request
        self.waiting.append(request)

    @property
    def has_unfinished(self) -> bool:
        return bool(self.running or self.waiting)

    def schedule(self) -> SchedulerOutput:
        raise NotImplementedError

    def wake_s(self) -> float | None:
        """When an idle policy acts without a new arrival (a batching window closing), or None."""
        return None

    def step_token_budget(self, output: SchedulerOutput) -> int:
        """The budget this step ran under (policies without one report what they used)."""
        return self.config.max_num_batched_tokens

    def update_from_output(self, output: SchedulerOutput, iteration: int) -> list[Request]:
        """Sample where a step reached the end of a sequence, free the finished requests."""
        return self._finish(self._sample(output, iteration))

    def advance_decodes(self, num_steps: int, iteration: int,
                        record: bool = True) -> tuple[DecodeBlocks, list[Request]]:
        """Apply `num_steps` steps in which every running request decodes one token (the
        engine checked with quiet_decode_steps that they are plain decodes): their blocks, their
        tokens from engine iteration `iteration` on, and the requests the last step finishes
        (`record=False`: without the events a run's records would need)."""
        running, kv = self.running, self.kv
        assert isinstance(kv, PagedKVCacheManager), "quiet_decode_steps allows paged KV only"
        num_rows = len(running)
        start = running.num_computed[:num_rows].copy()
        blocks = kv.advance_decodes(running.requests, start, num_steps, record)
        running.num_computed[:num_rows] += num_steps
        return blocks, self._finish(running.sample_chunk(0, num_rows, iteration, num_steps))

    def quiet_decode_steps(self) -> int:
        """How many steps from now are plain decodes of the whole running batch that take no
        more blocks than are free (0: this policy has no fast-forward, or the next step is not
        quiet). The engine cuts the run where an arrival comes."""
        return 0

    def abort(self, request_id: str) -> bool:
        """Drop a waiting or running request and free its blocks, as vLLM's
        Scheduler.finish_requests(FINISHED_ABORTED) does between steps (a client went away);
        False if it is not here (finished already, or never admitted)."""
        request = self.requests.pop(request_id, None)
        if request is None:
            return False
        if request.status is RequestStatus.RUNNING:
            self.running.remove(request)
        else:
            self.waiting.remove(request)
        request.status = RequestStatus.FINISHED
        self.kv.free(request)
        request.block_hashes = []
        return True

    def _finish(self, finished: list[Request]) -> list[Request]:
        connector = self.connector
        if connector is not None:  # tables a connector freed at this step's schedule, and
            # (vLLM Scheduler._free_request) the finished ones it keeps for a transfer
            self.released = connector.take_freed()
            kept = {r.id for r in finished if connector.request_finished(r)}
            self.released += [r.id for r in finished if r.id not in kept]
        else:
            kept = set()
            self.released = [r.id for r in finished]
        if finished:
            requests = self.requests
            for request in finished:
                request.status = RequestStatus.FINISHED
                if request.id in kept:
                    continue
                del requests[request.id]
                self.kv.free(request)
                request.block_hashes = []  # a finished request is never looked up again
            self.running.remove_many(finished)
        return finished

    def _sample(self, output: SchedulerOutput, iteration: int) -> list[Request]:
        """One token for every sampled entry at this engine iteration; the finished, in order."""
        finished: list[Request] = []
        requests = self.requests
        for entry in output.entries:
            if isinstance(entry, DecodeChunk):
                finished += self.running.sample_chunk(entry.lo, entry.hi, iteration)
            elif entry.sampled:
                request = requests[entry.id]
                request.add_token(iteration)
                if request.num_output_tokens >= request.output_len:
                    finished.append(request)
        return finished

    def _record(self, output: SchedulerOutput, request: Request, n: int, blocks: list[int],
                drafts: int = 0) -> None:
        """Schedule `n` tokens for `request`, `drafts` of them draft tokens."""
        start = request.num_computed_tokens
        num_tokens = request.num_tokens + request.num_output_placeholders
        sampled = start + n >= num_tokens
        prefill = n - drafts > 1 or start < num_tokens - 1
        output.entries.append(ScheduledEntry(request.id, n, start, sampled, prefill))
        request.is_prefill_chunk = not sampled  # vLLM sets it in _update_after_schedule
        if drafts:
            output.drafts[request.id] = drafts
        if request.first_scheduled_time is None:
            request.first_scheduled_time = self.now_s
        if blocks:
            output.new_blocks[request.id] = tuple(blocks)
        request.num_computed_tokens = start + n

    def _admit_head(self, output: SchedulerOutput, num_computed: int, n: int,
                    blocks: list[int], drafts: int = 0) -> None:
        """Move the head of the waiting queue to the running tail, its `num_computed` tokens
        found in the prefix cache, and schedule `n` tokens for it."""
        request = self.waiting.pop(0)
        (output.resumed if request.status is RequestStatus.PREEMPTED else output.new).append(
            request.id)
        request.status = RequestStatus.RUNNING
        self.running.append(request)
        request.num_computed_tokens = num_computed
        output.num_cached_tokens[request.id] = num_computed
        request.last_cached_tokens = num_computed
        if request.num_cached_tokens < 0:
            request.num_cached_tokens = num_computed
        self._record(output, request, n, blocks, drafts)

    def _preempt(self, request: Request, output: SchedulerOutput) -> None:
        """Recompute preemption: drop every block, start over, go to the front of the queue."""
        if isinstance(self.kv, CountingKVCacheManager):  # its cached blocks may be found again
            self.kv = self.kv.exact(self.requests)
        self.kv.free(request)
        request.status = RequestStatus.PREEMPTED
        request.num_computed_tokens = 0
        request.num_draft_tokens = 0  # vLLM's _preempt_request clears spec_token_ids
        request.num_preemptions += 1
        self.waiting.insert(0, request)
        output.preempted.append(request.id)
