"""A replica's quiet stretch planned past the router's scrapes (core/planned_stretch.py): a
scrape inside it sees the blocks its steps took by then (a hand count), and planning ahead
changes nothing: the router decides as when every replica stops at every scrape, and each
replica runs its share as a single engine would."""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pytest
from support.factories import make_config, routed_of

from servescope.core import fast_forward
from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.fleet import Fleet, hold
from servescope.core.planned_stretch import PlannedStretch
from servescope.core.request import RequestSpec
from servescope.core.routers.make import make_router
from servescope.traces.tenants import multi_tenant


def test_a_scrape_inside_a_stretch_sees_the_blocks_taken_by_then() -> None:
    specs = [RequestSpec("a", 5, 40, arrival_s=0.0), RequestSpec("b", 8, 40, arrival_s=0.0)]
    engine = Engine(make_config(num_gpu_blocks=64), specs, records=False)
    assert engine.advance_unrecorded() == 1  # both prompts: 2 blocks of 4 tokens each
    bound = fast_forward.stretch_bound(engine)
    assert bound is not None
    ahead = PlannedStretch(engine, *bound)
    ahead.price_to(1.0)
    at_s = ahead.starts[5]  # as the sixth step starts
    # five decode steps: a writes positions 5..9 (a block starts at 8), b 8..12 (at 8 and 12)
    state = ahead.state(0, at_s)
    assert (state.num_running, state.num_waiting) == (2, 0)
    assert state.num_free_blocks == engine.kv.num_free_blocks - 3
    ahead.apply_before(at_s)
    assert engine.kv.num_free_blocks == state.num_free_blocks and engine.clock.time_s == at_s
    assert engine.scheduler.running.num_computed[:2].tolist() == [10, 13]


class Stopping(Fleet):
    """The fleet without planning ahead: every replica stands at every scrape."""

    def run_unrecorded(self, replica: int, at: float | None) -> bool:
        hold(self.engines[replica], at)
        while self.engines[replica].advance_unrecorded():
            pass
        return True


class Counted(Fleet):
    """The fleet, counting the scrapes that read a replica off a planned stretch."""

    num_read_ahead = 0
    num_read_settled = 0  # scrapes of a replica that stood idle since the last

    def observe(self, at: float, moved: Sequence[bool]) -> None:
        self.num_read_ahead += sum(ahead is not None for ahead in self.ahead)
        self.num_read_settled += sum(s and not m for s, m in zip(self.settled, moved, strict=True))
        super().observe(at, moved)


def poisson(n: int, rate: float, seed: int = 3) -> list[RequestSpec]:
    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.exponential(1.0 / rate, n))
    return [RequestSpec(f"r{i}", int(rng.integers(8, 120)), int(rng.integers(8, 90)),
                        arrival_s=float(t)) for i, t in enumerate(arrivals)]


PLAIN = make_config(num_gpu_blocks=160, max_num_seqs=16, max_num_batched_tokens=128)
PREFIXED = EngineConfig.from_dict({"num_gpu_blocks": 120, "block_size": 16,
                                   "enable_prefix_caching": True,
                                   "max_num_batched_tokens": 512})
TENANTS = multi_tenant(np.random.default_rng(5), 160, 20.0, num_tenants=6,
                       system_prompt_len=256, turns=(1, 3), user_len=(16, 64),
                       output_len=(8, 48), think_s=0.5)


@pytest.mark.parametrize(("router", "config", "specs"), [
    ("least-kv", PLAIN, poisson(160, 40.0)),
    ("shortest-queue", PLAIN, poisson(160, 40.0)),
    ("llm-d", PREFIXED, TENANTS),
    ("prefix-precise", PREFIXED, TENANTS),
])
def test_planning_past_scrapes_changes_no_decision(router: str, config: EngineConfig,
                                                   specs: list[RequestSpec]) -> None:
    runs, decisions = [], []
    for kind in (Counted, Stopping):
        fleet = kind([config] * 3, specs, make_router(router, 3, {}, 0, config.block_size),
                     records=False)
        decisions.append(routed_of(fleet))
        runs.append(fleet)
    ahead, stopping = runs
    assert isinstance(ahead, Counted) and ahead.num_read_ahead > 20  # it did plan ahead
    assert decisions[0] == decisions[1]  # the same replica, scores and reason each time
    assert json.dumps(ahead.summary()) == json.dumps(stopping.summary())
    for replica, engine in enumerate(ahead.engines):
        share = [s for s in specs if ahead.replica_of[s.id] == replica]
        alone = Engine(config, share, records=False)
        alone.run_to_end()
        assert json.dumps(alone.summary()) == json.dumps(engine.summary())


@pytest.mark.parametrize("router", ["least-kv", "prefix-precise"])
def test_a_replica_left_idle_is_read_as_it_stood_as_stopping_there_reads_it(router: str) -> None:
    """Sparse arrivals over 4 replicas: a replica often stands idle across scrapes, and a
    scrape reads it as it stood (settled) instead of running it; the router decides as when
    every replica stops at every scrape."""
    specs = poisson(60, 4.0, seed=11)
    runs, decisions = [], []
    for kind in (Counted, Stopping):
        fleet = kind([PREFIXED] * 4, specs, make_router(router, 4, {}, 0, PREFIXED.block_size),
                     records=False)
        decisions.append(routed_of(fleet))
        runs.append(fleet)
    settled, stopping = runs
    assert isinstance(settled, Counted) and settled.num_read_settled > 30
    assert decisions[0] == decisions[1]
    assert json.dumps(settled.summary()) == json.dumps(stopping.summary())


def heard_at_scrapes(kind: type[Fleet]) -> list[tuple[float, list[dict[int, int]]]]:
    """A prefix-precise router's index of each replica after every scrape (TENANTS)."""
    router = make_router("prefix-precise", 3, {}, 0, PREFIXED.block_size)
    snapshots: list[tuple[float, list[dict[int, int]]]] = []

    class Listening(kind):  # type: ignore[valid-type, misc]
        def observe(self, at: float, moved: Sequence[bool]) -> None:
            super().observe(at, moved)
            snapshots.append((at, [dict(c) for c in router.precise.copies]))

    Listening([PREFIXED] * 3, TENANTS, router, records=False).run_to_end()
    return snapshots


def test_a_kv_event_subscriber_hears_at_each_scrape_what_stopping_there_tells() -> None:
    """A multi-turn prompt's shared part ends inside its last block, so decoding fills that
    block and stores it under a shared hash: the router hears it at the first scrape after
    the step that filled it, as when the replica stops there, not when the stretch is applied."""
    ahead, stopping = heard_at_scrapes(Fleet), heard_at_scrapes(Stopping)
    assert len(ahead) > 20 and ahead == stopping
