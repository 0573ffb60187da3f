"""vLLM 0.33's KV connector, scheduler side, for prefill/decode disaggregation: what the
NixlConnector (vllm/distributed/kv_transfer/kv_connector/v1/nixl/pull_scheduler.py) and the
scheduler around it (vllm/v1/core/sched/scheduler.py) decide, step for step. A scheduler with a
`connector` (core/scheduler/vllm_v1.py) calls these hooks; without one nothing changes.

Prefill side (kv_transfer_params do_remote_decode; the P/D proxy sends max_tokens 1):
  - P1 a finished request keeps its blocks: NixlConnectorScheduler.request_finished answers
    delay_free_blocks, so Scheduler._free_request does not free them;
  - P2 they are freed once the decode side has read them: Scheduler._update_from_kv_xfer_
    finished frees a request's blocks when the worker reports it in finished_sending.
Decode side (do_remote_prefill):
  - D1 admission: get_num_new_matched_tokens answers the prompt tokens past the local prefix
    hit, loaded asynchronously; Scheduler.schedule allocates blocks for all of them
    (allocate_slots with num_external_computed_tokens, delay_cache_blocks=True), sets
    num_computed_tokens to local + external, schedules 0 tokens (the token budget is untouched)
    and parks the request WAITING_FOR_REMOTE_KVS; admission still needs a max_num_seqs slot;
  - D2 the load starts with the step that admitted it and ends after the link's time
    (core/kv_link.py); until then the request is skipped, holding its blocks, and, being in no
    running list, is never a preemption victim;
  - D3 then Scheduler._update_waiting_for_remote_kv caches the loaded blocks and, the whole
    prompt being computed, sets num_computed_tokens to num_tokens - 1 so the last prompt token
    is recomputed and the first output token sampled; the request waits at the front (vLLM
    drains kv_holding_waiting before waiting) and is admitted for that one token;
  - D4 update_state_after_alloc clears do_remote_prefill: a later recompute preemption
    prefills locally, with no second transfer;
  - D5 a failed load: kv_load_failure_policy's default "fail" (vllm/config/kv_transfer.py)
    finishes the request FINISHED_ERROR (Scheduler.update_from_output) and frees its blocks;
    "recompute" sets num_computed_tokens to 0 (Scheduler._handle_failed_recving), frees the
    blocks and lets it prefill locally.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from servescope.core.kv_link import KVLink
from servescope.core.request import Request, RequestStatus
from servescope.core.scheduler.base import SchedulerOutput

FAILURE_POLICIES = ("fail", "recompute")


@dataclass
class Load:
    """One asynchronous KV load into the decode side."""

    request_id: str
    prefill_replica: int
    num_tokens: int  # loaded from the prefill side (past the local prefix hit)
    num_blocks: int  # the blocks allocated for them (the record's new_blocks past the hits)
    num_bytes: int
    admitted_s: float  # the step that allocated its blocks started
    start_s: float  # its bytes started moving (after the link's queue)
    done_s: float
    failed: bool


class PrefillConnector:
    """A prefill engine's connector: finished requests' blocks held until read (P1, P2)."""

    def __init__(self) -> None:
        self.sending: dict[str, Request] = {}  # finished, blocks held for the decode side
        self.read_s: dict[str, float] = {}  # when the decode side finished reading them
        self.freed: list[str] = []  # tables freed since the last update (its record says so)

    waiting_for_kv = False  # nothing here waits on a transfer: a finished request is done

    def kv_state(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        return (), ()  # a prefill engine's records have no remote KV to wait for

    @property
    def busy(self) -> bool:
        """Blocks wait for a free at a schedule (no quiet stretch may skip it)."""
        return bool(self.sending)

    def request_finished(self, request: Request) -> bool:
        """P1: whether the scheduler must keep the finished request's blocks (it must)."""
        self.sending[request.id] = request
        return True

    def wants_load(self, request: Request) -> bool:
        return False  # a prefill engine computes every prompt itself

    def read_done(self, request_id: str, done_s: float) -> None:
        """The decode side's load of `request_id` ends (or ended) at `done_s`."""
        self.read_s[request_id] = done_s

    def before_schedule(self, scheduler: Any) -> None:
        """P2: free the blocks of every request whose KV has been read by now."""
        now = scheduler.now_s
        for request_id in [r for r, t in self.read_s.items() if t <= now]:
            del self.read_s[request_id]
            request = self.sending.pop(request_id)
            scheduler.kv.free(request)
            del scheduler.requests[request_id]
            request.block_hashes = []
            self.freed.append(request_id)

    def take_freed(self) -> list[str]:
        freed, self.freed = self.freed, []
        return freed

    def wake_s(self, now_s: float) -> float | None:
        """When the next known read ends: its blocks free at the schedule then (an engine
        whose waiting requests do not fit waits for it)."""
        return min(self.read_s.values()) if self.read_s else None


class DecodeConnector:
    """A decode engine's connector: remote-prefilled requests admitted with their KV arriving
    over the links from the prefill replicas (D1-D5)."""

    def __init__(self, links: dict[int, KVLink], bytes_per_token: int,
                 failure_policy: str = "fail") -> None:
        assert failure_policy in FAILURE_POLICIES
        self.links = links  # by prefill replica
        self.bytes_per_token = bytes_per_token
        self.failure_policy = failure_policy
        self.expected: dict[str, tuple[int, bool]] = {}  # id -> (prefill replica, load fails)
        self.holding: list[Request] = []  # WAITING_FOR_REMOTE_KVS, in admission order
        self.loads: dict[str, Load] = {}
        self.errored: list[tuple[str, str]] = []  # (id, why) finished FINISHED_ERROR
        self.notices: list[Load] = []  # loads started, for the fleet to tell the prefill side
        self.freed: list[str] = []  # failed requests' tables freed since the last update
        self.records = False  # keep `arrived` for the records (core/pd_fleet.py sets it)
        self.arrived: list[str] = []  # loads applied since the last record (D3, D5)

    @property
    def busy(self) -> bool:
        return bool(self.holding)

    @property
    def waiting_for_kv(self) -> bool:
        """Requests parked WAITING_FOR_REMOTE_KVS: unfinished work, woken by wake_s."""
        return bool(self.holding)

    def expect(self, request_id: str, prefill_replica: int, fails: bool = False) -> None:
        """`request_id` will arrive with do_remote_prefill from `prefill_replica`."""
        self.expected[request_id] = (prefill_replica, fails)

    def request_finished(self, request: Request) -> bool:
        """A decode-side request frees its blocks at once (NixlConnectorScheduler.
        request_finished: a D node without bidirectional transfer delays nothing)."""
        return False

    def take_freed(self) -> list[str]:
        freed, self.freed = self.freed, []
        return freed

    def kv_state(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """A record's (waiting_for_kv, kv_arrived): the requests parked WAITING_FOR_REMOTE_KVS
        after this step's schedule, and those whose load was applied since the last record."""
        arrived, self.arrived = tuple(self.arrived), []
        return tuple(r.id for r in self.holding), arrived

    def wants_load(self, request: Request) -> bool:
        return request.id in self.expected and request.num_computed_tokens == 0

    def start_load(self, scheduler: Any, request: Request, output: SchedulerOutput,
                   watermark: bool) -> bool:
        """D1, D2 for the head of the waiting queue: False (nothing changed) when its blocks
        do not fit. Its blocks are the step's new_blocks, as vLLM allocates them here."""
        kv = scheduler.kv
        computed = kv.get_computed_blocks(request)
        num_local = len(computed) * kv.block_size
        num_external = request.num_tokens - num_local  # pull_scheduler's count (no backoff)
        blocks = kv.allocate_slots(request, num_external, computed,
                                   reserve_full=scheduler.config.scheduler_reserve_full_isl,
                                   watermark=watermark, delay_cache_blocks=True)
        if blocks is None:
            return False
        scheduler.waiting.pop(0)
        output.new_blocks[request.id] = tuple(blocks)
        prefill_replica, fails = self.expected.pop(request.id)  # D4
        request.status = RequestStatus.WAITING_FOR_REMOTE_KVS
        request.num_computed_tokens = num_local + num_external
        if request.num_cached_tokens < 0:  # the local prefix hit, as the summary counts hits
            request.num_cached_tokens = num_local
        self.holding.append(request)
        num_bytes = num_external * self.bytes_per_token
        start, done = self.links[prefill_replica].send(num_bytes, scheduler.now_s)
        load = Load(request.id, prefill_replica, num_external, len(blocks) - len(computed),
                    num_bytes, scheduler.now_s, start, done, fails)
        self.loads[request.id] = load
        self.notices.append(load)
        return True

    def before_schedule(self, scheduler: Any) -> None:
        """D3, D5: loads done by now are applied; the ready requests go to the queue's front
        in admission order."""
        now = scheduler.now_s
        ready = [r for r in self.holding if self.loads[r.id].done_s <= now]
        if self.records:
            self.arrived += [r.id for r in ready]
        for request in reversed(ready):
            self.holding.remove(request)
            if self.finish_load(scheduler, request):
                scheduler.waiting.insert(0, request)

    def finish_load(self, scheduler: Any, request: Request) -> bool:
        """Apply a finished load; False when the request ends here (a failure under "fail")."""
        kv = scheduler.kv
        if self.loads[request.id].failed:
            request.num_computed_tokens = 0
            if self.failure_policy == "fail":
                request.status = RequestStatus.FINISHED_ERROR
                kv.free(request)
                del scheduler.requests[request.id]
                self.errored.append((request.id, "KV transfer from the prefill side failed"))
                self.freed.append(request.id)
                return False
            kv.free(request)  # no valid tokens: vLLM frees the blocks and prefills locally
        else:
            if kv.enable_caching:
                kv.cache_full_blocks(request, request.num_computed_tokens)
            if request.num_computed_tokens == request.num_tokens:
                request.num_computed_tokens = request.num_tokens - 1
        request.status = (RequestStatus.PREEMPTED if request.num_preemptions
                          else RequestStatus.WAITING)
        return True

    def wake_s(self, now_s: float) -> float | None:
        """When the next load in flight ends (an idle engine waits for it)."""
        later = [self.loads[r.id].done_s for r in self.holding]
        return min(later) if later else None
