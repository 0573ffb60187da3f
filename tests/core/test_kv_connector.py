"""vLLM 0.33's KV connector rules (core/kv_connector.py), each on a hand-made case: a decode
engine admitting remote-prefilled requests, a prefill engine holding then freeing its blocks.
Steps take 10 ms; a link moves 1,000,000 bytes/s after its latency, a token's KV is 1,000 bytes,
so a transfer of n tokens takes latency + n ms."""

from __future__ import annotations

import numpy as np
from support.factories import make_config

from servescope.core.engine import Engine
from servescope.core.invariants import check_invariants
from servescope.core.kv_connector import DecodeConnector, PrefillConnector
from servescope.core.kv_link import KVLink, LinkSpec
from servescope.core.request import RequestSpec, RequestStatus

STEP_MS = 10.0
BYTES_PER_TOKEN = 1000


def step_time(n: np.ndarray, start: np.ndarray) -> float:
    return STEP_MS


def decode_engine(specs: list[RequestSpec], remote: dict[str, bool], latency_ms: float = 13.0,
                  policy: str = "fail", **config: object) -> tuple[Engine, DecodeConnector]:
    """A decode engine whose `remote` requests (id -> the load fails) come from prefill 0."""
    engine = Engine(make_config(**config), specs, step_time, fast_forward=False)
    link = KVLink(LinkSpec("infiniband", 1e-3, latency_ms), 1)
    connector = DecodeConnector({0: link}, BYTES_PER_TOKEN, policy)
    for request_id, fails in remote.items():
        connector.expect(request_id, 0, fails)
    engine.scheduler.connector = connector
    return engine, connector


def plan(record) -> list[tuple[str, int, int]]:
    return [(e.id, e.n, e.start) for e in record.scheduled]


def checked_step(engine: Engine):
    record = engine.step()
    check_invariants(engine.scheduler, record)
    return record


def test_remote_request_holds_blocks_until_its_load_ends_then_decodes_its_last_token() -> None:
    # D1-D3: r1's 12 tokens load in 13 + 12 = 25 ms from the admitting step (t = 0)
    engine, connector = decode_engine(
        [RequestSpec("r0", 8, 10, arrival_s=0.0), RequestSpec("r1", 12, 3, arrival_s=0.0)],
        {"r1": False})
    connector.records = True
    first = checked_step(engine)
    assert plan(first) == [("r0", 8, 0)]  # r1 schedules 0 tokens at its admission
    r1 = engine.scheduler.requests["r1"]
    assert r1.status is RequestStatus.WAITING_FOR_REMOTE_KVS
    # its blocks are allocated at admission (allocate_slots with the external tokens), so the
    # admitting step's record shows them
    assert list(first.new_blocks["r1"]) == engine.kv.tables["r1"]
    assert len(first.new_blocks["r1"]) == 3
    assert first.waiting_for_kv == ("r1",) and "r1" in first.waiting
    assert connector.loads["r1"].done_s == 0.025
    for start in (8, 9):  # t = 10, 20 ms: still in flight
        record = checked_step(engine)
        assert plan(record) == [("r0", 1, start)]
        assert (record.waiting_for_kv, record.kv_arrived) == (("r1",), ())
    ready = checked_step(engine)  # t = 30 ms: the load ended at 25 ms
    assert (ready.kv_arrived, ready.waiting_for_kv) == (("r1",), ())
    assert plan(ready) == [("r0", 1, 10), ("r1", 1, 11)]
    assert ready.new == ("r1",) and r1.num_output_tokens == 1


def test_a_load_takes_no_token_budget() -> None:
    # D1: r0 leaves 1 token of 9; r1's admission takes none, so r2 still gets that token
    engine, _ = decode_engine(
        [RequestSpec("r0", 8, 2, arrival_s=0.0), RequestSpec("r1", 12, 2, arrival_s=0.0),
         RequestSpec("r2", 4, 2, arrival_s=0.0)], {"r1": False}, max_num_batched_tokens=9)
    assert plan(checked_step(engine)) == [("r0", 8, 0), ("r2", 1, 0)]


def test_a_load_needs_a_max_num_seqs_slot() -> None:
    engine, _ = decode_engine(
        [RequestSpec("r0", 8, 5, arrival_s=0.0), RequestSpec("r1", 12, 2, arrival_s=0.0)],
        {"r1": False}, max_num_seqs=1)
    checked_step(engine)
    assert engine.scheduler.requests["r1"].status is RequestStatus.WAITING
    assert "r1" not in engine.kv.tables


def test_only_blocks_past_the_decode_side_prefix_hit_are_pulled() -> None:
    # r0 computes the shared 8-token prefix locally; r1 then loads only its other 4 tokens
    shared = (("system", 8),)
    engine, connector = decode_engine(
        [RequestSpec("r0", 12, 1, arrival_s=0.0, prefix=shared),
         RequestSpec("r1", 12, 2, arrival_s=0.05, prefix=shared)], {"r1": False},
        enable_prefix_caching=True)
    records = [r for r in engine.run()]
    load = connector.loads["r1"]
    assert (load.num_tokens, load.num_bytes) == (4, 4 * BYTES_PER_TOKEN)
    assert load.done_s - load.admitted_s == 0.013 + 0.004
    done = {r.id: r for r in engine.done_requests}
    assert done["r1"].num_cached_tokens == 8 and len(records) > 0


def test_a_request_in_flight_is_never_preempted() -> None:
    # 15 usable blocks: r0 takes 2, r1's load 10; r0's growth then preempts r0 itself
    engine, _ = decode_engine(
        [RequestSpec("r0", 8, 40, arrival_s=0.0), RequestSpec("r1", 40, 2, arrival_s=0.0)],
        {"r1": False}, latency_ms=1000.0, num_gpu_blocks=16, max_num_batched_tokens=64)
    records = []
    while not any(r.preempted for r in records):
        records.append(checked_step(engine))
    assert records[-1].preempted == ("r0",)
    r1 = engine.scheduler.requests["r1"]
    assert r1.status is RequestStatus.WAITING_FOR_REMOTE_KVS and len(engine.kv.tables["r1"]) == 10
    list(engine.run())
    assert {r.id for r in engine.done_requests} == {"r0", "r1"}


def test_after_its_load_a_preempted_request_prefills_locally() -> None:
    # D4: update_state_after_alloc cleared do_remote_prefill
    engine, connector = decode_engine([RequestSpec("r1", 12, 2, arrival_s=0.0)], {"r1": False})
    checked_step(engine)
    r1 = engine.scheduler.requests["r1"]
    r1.num_computed_tokens = 0  # as a recompute preemption leaves it
    assert not connector.wants_load(r1)


def test_a_failed_load_fails_the_request_by_default() -> None:
    # D5, policy "fail": FINISHED_ERROR, blocks freed, no token
    engine, connector = decode_engine(
        [RequestSpec("r0", 8, 6, arrival_s=0.0), RequestSpec("r1", 12, 2, arrival_s=0.0)],
        {"r1": True})
    records = list(engine.run())
    assert connector.errored == [("r1", "KV transfer from the prefill side failed")]
    assert "r1" not in engine.kv.tables and "r1" not in engine.scheduler.requests
    assert all(e.id != "r1" for r in records for e in r.scheduled)
    assert [r.id for r in engine.done_requests] == ["r0"]


def test_a_failed_load_under_recompute_prefills_locally() -> None:
    # D5, policy "recompute": num_computed_tokens 0, the blocks freed, a local prefill
    engine, _ = decode_engine(
        [RequestSpec("r0", 8, 6, arrival_s=0.0), RequestSpec("r1", 12, 2, arrival_s=0.0)],
        {"r1": True}, policy="recompute")
    records = list(engine.run())
    r1_plans = [(r.time_s, e.n, e.start) for r in records for e in r.scheduled if e.id == "r1"]
    assert r1_plans[0] == (0.03, 12, 0)  # the load failed at 25 ms; prefilled at 30 ms
    assert {r.id for r in engine.done_requests} == {"r0", "r1"}


def test_an_idle_decode_engine_waits_for_the_load() -> None:
    engine, _ = decode_engine([RequestSpec("r1", 12, 2, arrival_s=0.0)], {"r1": False})
    records = list(engine.run())
    # the admitting plan schedules no token: a step of no forward that allocates r1's blocks
    # (vLLM's EngineCore.step runs it; GPUModelRunner.execute_model: kv_connector_no_forward),
    # taking no time here; then the clock moves to the load's end (25 ms)
    assert [(round(r.time_s, 6), plan(r), len(r.new_blocks.get("r1", ()))) for r in records] == [
        (0.0, [], 3), (0.025, [("r1", 1, 11)], 0), (0.035, [("r1", 1, 12)], 1)]  # 4 a block
    assert records[0].step_time_ms == 0.0 and records[0].waiting_for_kv == ("r1",)


def test_prefill_side_keeps_blocks_until_read_then_frees_them() -> None:
    # P1: r0 (max_tokens 1) finishes at 10 ms holding 3 blocks; P2: read by 25 ms, freed at
    # the first schedule after (r1's step at 30 ms)
    engine = Engine(make_config(), [RequestSpec("r0", 12, 1, arrival_s=0.0),
                                    RequestSpec("r1", 4, 1, arrival_s=0.03)],
                    step_time, fast_forward=False)
    connector = PrefillConnector()
    engine.scheduler.connector = connector
    first = checked_step(engine)
    assert first.finished == ("r0",) and len(engine.kv.tables["r0"]) == 3
    assert first.freed_blocks == ()
    connector.read_done("r0", 0.025)
    second = checked_step(engine)
    assert second.time_s == 0.03 and set(second.freed_blocks) == set(first.new_blocks["r0"])
    assert "r0" not in engine.kv.tables
