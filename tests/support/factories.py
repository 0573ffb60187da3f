"""Small factories for core tests: a few requests, 16 blocks of 4 tokens unless told otherwise."""

from __future__ import annotations

import json
from collections.abc import Sequence

from servescope.core.config import EngineConfig
from servescope.core.decode_stretch import DecodeStretch
from servescope.core.engine import Engine
from servescope.core.fleet import Fleet, RoutedArrival
from servescope.core.invariants import check_invariants
from servescope.core.records import BlockTables, StepRecord
from servescope.core.request import RequestSpec
from servescope.core.step_time import StepTimeFn


def make_config(**overrides: object) -> EngineConfig:
    base: dict[str, object] = dict(block_size=4, num_gpu_blocks=16, max_num_seqs=8,
                                   max_num_batched_tokens=32, enable_prefix_caching=False)
    base.update(overrides)
    return EngineConfig.from_dict(base)


def make_requests(*lengths: tuple[int, int], arrival_step: int = 0) -> list[RequestSpec]:
    return [RequestSpec(f"r{i}", p, o, arrival_step=arrival_step)
            for i, (p, o) in enumerate(lengths)]


def run_checked(config: EngineConfig, specs: Sequence[RequestSpec],
                max_steps: int = 100_000) -> list[StepRecord]:
    """Run to the end step by step, checking every invariant after every step; then again with
    fast-forward, whose expanded records must be the same (see checked_fast_forward)."""
    engine = Engine(config, specs, fast_forward=False)
    records = []
    tables = BlockTables(config.async_scheduling)
    for record in engine.run():
        check_invariants(engine.scheduler, record)
        tables.apply(record)
        tables.after_update(record)
        assert _with_in_flight(engine, tables) == engine.kv.tables, (
            "records do not fold into the block tables")
        records.append(record)
        assert len(records) < max_steps, "engine did not terminate"
    assert not engine.scheduler.running and not engine.scheduler.waiting
    assert not engine.kv.tables
    fast, _ = checked_fast_forward(config, specs)
    assert [serialized(r) for r in fast] == [serialized(r) for r in records]
    return records


def checked_fast_forward(config: EngineConfig, specs: Sequence[RequestSpec],
                         step_time: StepTimeFn | None = None,
                         ) -> tuple[list[StepRecord], Engine]:
    """Run with fast-forward through advance(): every expanded record folds into the block
    tables and passes the record checks; the engine's state, which a decode stretch leaves at its
    last step, passes every invariant against that last record."""
    engine = Engine(config, specs, step_time)
    records: list[StepRecord] = []
    tables = BlockTables(config.async_scheduling)
    while (item := engine.advance()) is not None:
        expanded = list(item.records()) if isinstance(item, DecodeStretch) else [item]
        if isinstance(item, DecodeStretch):
            assert len(expanded) == item.num_steps >= 2
        for record in expanded:
            tables.apply(record)
            tables.after_update(record)
            assert record.num_scheduled_tokens <= record.token_budget
            assert len(record.running) <= record.max_num_seqs
        check_invariants(engine.scheduler, expanded[-1])
        assert _with_in_flight(engine, tables) == engine.kv.tables, (
            "records do not fold into the block tables")
        records += expanded
    return records, engine


def serialized(record: StepRecord) -> str:
    """The record as the wire and the files carry it, plus its clock values' exact bits."""
    return json.dumps([record.to_dict(), repr(record.time_s), repr(record.step_time_ms)],
                      sort_keys=True)


def _with_in_flight(engine: Engine, folded: BlockTables) -> dict[str, list[int]]:
    """The tables folded so far, plus (async scheduling) those of the step already scheduled,
    less those the update that followed it released (a finished request's whole table, blocks
    that step appended for it included)."""
    flight = engine.batch_queue.in_flight if engine.batch_queue else None
    if flight is None:
        return {k: v for k, v in folded.tables.items() if k not in folded.held}
    tables = {k: list(v) for k, v in folded.tables.items() if k not in flight.output.preempted}
    for rid, blocks in flight.output.new_blocks.items():
        tables.setdefault(rid, []).extend(blocks)
    return {k: v for k, v in tables.items() if k not in folded.held}


def routed_of(fleet: Fleet) -> list[RoutedArrival]:
    """The fleet run to its end; its routing decisions in order (Fleet.run yields them)."""
    return [item for item in fleet.run() if isinstance(item, RoutedArrival)]
