"""The requests yet to arrive, in arrival order on the clock the workload uses, and the check
that refuses one no config can run (too long, or more KV than the whole cache).

A fleet's replica (core/fleet.py) also holds a gate: a stand-in arrival, last in the queue, at
the next moment the router may send it a request. Fast-forward and the scheduler see it as an
arrival to come; the engine admits nothing past it and pauses there (core/admit.py) until the
fleet adds what it routed and moves the gate on."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from functools import lru_cache

from servescope.core.config import EngineConfig
from servescope.core.kv_cache_manager import KVCacheManager, cdiv
from servescope.core.request import RequestSpec

GATE_ID = "<gate>"  # the gate's id: never admitted, never in a record


@lru_cache(maxsize=1, typed=True)
def gate_at(key: float, step_clock: bool) -> RequestSpec:
    """The gate at `key`: one for all of a fleet's replicas, held at the same scrape."""
    return (RequestSpec(GATE_ID, 1, 1, arrival_step=int(key)) if step_clock
            else RequestSpec(GATE_ID, 1, 1, arrival_s=key))


class Arrivals:
    __slots__ = ("gate", "pending", "step_clock")

    def __init__(self, specs: Sequence[RequestSpec], step_clock: bool) -> None:
        self.step_clock = step_clock
        self.pending = deque(sorted(specs, key=self.key))
        self.gate: RequestSpec | None = None

    def add(self, spec: RequestSpec) -> None:
        """A request routed here, arriving no earlier than every one queued (the gate goes:
        the fleet sets the next before it advances the engine again)."""
        self.drop_gate()
        assert not self.pending or self.key(self.pending[-1]) <= self.key(spec)
        self.pending.append(spec)

    def hold_at(self, key: float) -> None:
        """Admit nothing due at or after `key` (on the workload's clock) until moved on."""
        self.drop_gate()
        assert not self.pending or self.key(self.pending[-1]) <= key
        self.gate = gate_at(key, self.step_clock)
        self.pending.append(self.gate)

    def drop_gate(self) -> None:
        if self.gate is not None:
            assert self.pending[-1] is self.gate
            self.pending.pop()
            self.gate = None

    def gate_due(self, now: float) -> bool:
        """Whether the engine stands at its gate: the next plan would admit what is due now."""
        return self.gate is not None and self.key(self.gate) <= now

    def key(self, spec: RequestSpec) -> float:
        return float(spec.arrival_step or 0) if self.step_clock else (spec.arrival_s or 0.0)

    def __len__(self) -> int:
        return len(self.pending)

    def __bool__(self) -> bool:
        return bool(self.pending)

    def next(self) -> RequestSpec | None:
        """The next request to arrive, None when all have."""
        return self.pending[0] if self.pending else None

    def take_due(self, now: float) -> Iterator[RequestSpec]:
        """The requests due by `now`, taken in arrival order."""
        pending, key, gate = self.pending, self.key, self.gate
        while pending and pending[0] is not gate and key(pending[0]) <= now:
            yield pending.popleft()

    def specs(self) -> list[RequestSpec]:
        """The requests yet to arrive, in arrival order."""
        return list(self.pending)

    def keep_last(self, specs: Sequence[RequestSpec], num_pending: int) -> None:
        """Yet to arrive: the last `num_pending` of `specs` (all of a run's requests in arrival
        order), as after that many arrived (a checkpoint keeps the count, not the requests)."""
        self.pending = deque(specs[len(specs) - num_pending:])


def unfit(spec: RequestSpec, config: EngineConfig, kv: KVCacheManager) -> tuple[str, str] | None:
    """Why `config` can never run `spec`: ("max_model_len" | "kv", why), else None."""
    total = spec.prompt_len + spec.output_len
    if config.max_model_len is not None and total > config.max_model_len:
        return "max_model_len", (f"prompt + output = {total} tokens exceeds max_model_len "
                                 f"{config.max_model_len}")
    reservation = kv.reservation_tokens(spec.prompt_len, spec.output_len)
    blocks = cdiv(reservation, config.block_size)
    usable = kv.pool.num_usable_blocks
    if blocks > usable:
        return "kv", f"needs {blocks} KV blocks but the cache has only {usable}"
    return None


def rejection(spec: RequestSpec, config: EngineConfig, kv: KVCacheManager,
              known: bool) -> str | None:
    """Why an arriving request is refused (`known`: its id is taken), else None."""
    if spec.prompt_len < 1 or spec.output_len < 1:
        return "prompt_len and output_len must be at least 1"
    why = unfit(spec, config, kv)
    if why is not None and why[0] == "max_model_len":
        return why[1]
    if known:
        return "duplicate request id"
    return None if why is None else why[1]
