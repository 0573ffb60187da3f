"""A P/D fleet's record stream (core/pd_fleet.py PDFleet.run, core/pd_events.py): in time
order, each transfer matching the blocks its decode record allocated, each remote-prefilled
request waiting for its KV exactly from admission to arrival, and the same summary unrecorded."""

from __future__ import annotations

from support.factories import make_config
from test_pd_fleet import mixed_trace

from servescope.core.kv_link import LinkSpec
from servescope.core.pd_events import PoolRouted, PoolStep, Transfer, event_time
from servescope.core.pd_fleet import PDFleet
from servescope.core.request import RequestSpec
from servescope.core.resolve import resolve_config
from servescope.core.routers.make import make_router

LINK = LinkSpec("infiniband", 1e-3, 13.0)  # 1,000,000 B/s after 13 ms
BYTES_PER_TOKEN = 1000


def specs() -> list[RequestSpec]:
    return [RequestSpec(f"r{i}", 8 + 5 * (i % 4), 3 + i % 3, arrival_s=0.004 * i)
            for i in range(10)]


def hand_made(records: bool, threshold: int = 0,
              fails: frozenset[str] = frozenset()) -> PDFleet:
    configs = [make_config(), make_config()]
    return PDFleet(configs[:1], configs, specs(), make_router("round-robin", 1),
                   make_router("round-robin", 2), LINK, threshold, BYTES_PER_TOKEN,
                   fails=fails, records=records)


def test_the_stream_is_in_time_order_and_routes_each_request() -> None:
    events = list(hand_made(records=True, threshold=14).run())
    times = [event_time(e) for e in events]
    assert times == sorted(times)
    routed = [(e.pool, e.routed.request_id) for e in events if isinstance(e, PoolRouted)]
    assert sorted(r for p, r in routed if p == "decode") == sorted(s.id for s in specs())
    local = [e.routed for e in events if isinstance(e, PoolRouted)
             and "prefills locally" in e.routed.reason]
    # llm-d's decider: fewer than 14 non-cached prompt tokens stay on the decode replica
    assert {r.request_id for r in local} == {s.id for s in specs() if s.prompt_len < 14}
    assert {r for p, r in routed if p == "prefill"} == {s.id for s in specs()
                                                        if s.prompt_len >= 14}
    assert {e.pool for e in events if isinstance(e, PoolStep)} == {"prefill", "decode"}


def decode_records(events: list, replica: int) -> list:
    return [e.record for e in events
            if isinstance(e, PoolStep) and e.pool == "decode" and e.replica == replica]


def test_each_transfer_matches_its_admission_and_the_wait_for_kv() -> None:
    events = list(hand_made(records=True, fails=frozenset({"r3"})).run())
    transfers = [e for e in events if isinstance(e, Transfer)]
    assert len(transfers) == len(specs())
    for transfer in transfers:
        records = decode_records(events, transfer.decode_replica)
        rid = transfer.request_id
        admitted = next(i for i, r in enumerate(records) if rid in r.new_blocks)
        arrived = next(i for i, r in enumerate(records) if rid in r.kv_arrived)
        assert transfer.num_blocks == len(records[admitted].new_blocks[rid])
        assert transfer.ready_s <= records[admitted].time_s <= transfer.start_s
        waiting = [i for i, r in enumerate(records) if rid in r.waiting_for_kv]
        assert waiting == list(range(admitted, arrived))  # exactly admission .. arrival
        assert all(rid in records[i].waiting for i in waiting)
        assert records[arrived].time_s >= transfer.done_s > records[arrived - 1].time_s
        # the stream yields it once its bytes move: after the step that admitted it
        step = next(e for e in events if isinstance(e, PoolStep)
                    and e.record is records[admitted])
        assert events.index(step) < events.index(transfer)
    assert [t.failed for t in transfers if t.request_id == "r3"] == [True]


def test_records_or_not_the_summary_is_the_same() -> None:
    config = resolve_config({"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100",
                             "async_scheduling": False}).config
    trace = mixed_trace(40)
    summaries = []
    for records in (False, True):
        fleet = PDFleet([config], [config, config], trace, make_router("round-robin", 1),
                        make_router("least-requests", 2), LinkSpec.from_dict({}),
                        records=records)
        num_steps = sum(isinstance(e, PoolStep) for e in fleet.run())
        assert (num_steps > 0) == records
        summaries.append(fleet.summary())
    unrecorded, recorded = summaries
    assert recorded["completed"] == len(trace)
    assert recorded == unrecorded
