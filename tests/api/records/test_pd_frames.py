"""A P/D fleet's frames (api/records/pd_frames.py): lanes by pool, a decode replica's requests
waiting for remote KV as of a time, and the transfers a frame carries: those queued or moving
at its time, then the few done last; hand-made events in the shapes core/pd_events.py yields."""

from __future__ import annotations

import dataclasses

from support.factories import make_config

from servescope.api.records.pd_frames import DONE_PER_FRAME, PDFrames, pd_source
from servescope.api.wire.serialize import request_info
from servescope.core.engine import Engine
from servescope.core.pd_events import PoolStep, Transfer
from servescope.core.request import RequestSpec
from servescope.observability.pd import PDMeters


def frames(specs: tuple[RequestSpec, ...] = ()) -> PDFrames:
    meters = PDMeters(request_info(specs), {"prefill": [{}], "decode": [{}, {}]}, [32, 32], {})
    return PDFrames(list(specs), {"prefill": 1, "decode": 2}, [16, 16, 16], [0.0] * 3, meters)


def transfer(rid: str, ready: float, start: float, done: float) -> Transfer:
    return Transfer(rid, 0, 1, 4, 4096, ready, start, done, False, 64)


def test_a_frame_carries_the_transfers_under_way_then_the_last_done() -> None:
    f = frames()
    # b waits for the link behind a (core/kv_link.py's FIFO); old ones ended long before
    for t in [transfer("a", 1.0, 1.0, 1.5), transfer("b", 1.0, 1.5, 2.0),
              *(transfer(f"old{k}", 0.1 * k, 0.1 * k, 0.1 * k + 0.05) for k in range(8)),
              transfer("later", 3.0, 3.0, 3.1)]:
        f.add_transfer(t)
    got = [t["request_id"] for t in f.frame(1.2, None)["transfers"]]
    assert got[:2] == ["b", "a"]  # under way at 1.2: b queued, a moving
    assert got[2:] == [f"old{k}" for k in range(7, 7 - DONE_PER_FRAME, -1)]  # newest done
    assert "later" not in got  # its prefill had not ended by 1.2
    assert [t["request_id"] for t in f.frame(1.6, None)["transfers"]][:1] == ["b"]


def test_rows_are_by_pool_and_a_decode_row_lists_its_requests_waiting_for_kv() -> None:
    specs = (RequestSpec("x", 8, 2, arrival_s=0.0),)
    engine = Engine(make_config(), list(specs))
    first, second, *_ = list(engine.run())
    f = frames(specs)
    events = iter([PoolStep("prefill", 0, first),
                   PoolStep("decode", 1, dataclasses.replace(first, waiting_for_kv=("x",))),
                   PoolStep("decode", 1, second)])
    mine = list(iter(pd_source(events, 2, f), None))  # lane 2: decode replica 1
    assert len(mine) == 2
    at_first = f.frame(first.time_s, None)
    assert at_first["replicas"] == []
    assert [r["replica"] for r in at_first["pools"]["decode"]] == [0, 1]
    assert at_first["pools"]["decode"][1]["waiting_for_kv"] == ["x"]
    assert at_first["pools"]["decode"][0]["num_waiting_for_kv"] == 0
    assert f.frame(second.time_s, None)["pools"]["decode"][1]["waiting_for_kv"] == []
    assert "waiting_for_kv" not in at_first["pools"]["prefill"][0]
