"""P/D on the wire: a decode replica's records (waiting_for_kv, kv_arrived: core/records.py)
pack into their own short keys and unpack to the same records, and a fleet frame has rows
either flat (a fleet) or by pool (P/D), never both (api/wire/fleet.py)."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError
from support.factories import make_config

from servescope.api.wire.fleet import FleetFrame
from servescope.api.wire.serialize import pack, request_info, unpack
from servescope.api.wire.stream_state import StreamState
from servescope.core.kv_link import LinkSpec
from servescope.core.pd_events import PoolStep
from servescope.core.pd_fleet import PDFleet
from servescope.core.request import RequestSpec
from servescope.core.routers.make import make_router


def decode_records() -> tuple[list[RequestSpec], list[dict]]:
    # a slow link (1 MB/s after 13 ms, 1,000 bytes a token): each load spans decode steps
    specs = [RequestSpec(f"r{k}", 12 + 4 * k, 3, arrival_s=0.002 * k) for k in range(3)]
    configs = [make_config()]
    fleet = PDFleet(configs, configs, specs, make_router("round-robin", 1),
                    make_router("round-robin", 1), LinkSpec("infiniband", 1e-3, 13.0), 0, 1000,
                    records=True)
    return specs, [json.loads(json.dumps(e.record.to_dict())) for e in fleet.run()
                   if isinstance(e, PoolStep) and e.pool == "decode"]


def test_a_decode_replicas_records_round_trip_with_their_kv_lists() -> None:
    specs, records = decode_records()
    assert any(r.get("waiting_for_kv") for r in records)
    assert any(r.get("kv_arrived") for r in records)
    enc, dec = StreamState(request_info(specs)), StreamState(request_info(specs))
    for rec in records:
        packed = pack(enc, rec)
        assert ("wk" in packed) == bool(rec.get("waiting_for_kv"))
        assert "x" not in packed
        assert unpack(dec, json.loads(json.dumps(packed))) == rec


def test_a_fleet_frame_has_flat_rows_or_rows_by_pool_not_both() -> None:
    row = {"replica": 0, "num_running": 0, "num_waiting": 0, "kv_usage": 0.0,
           "prefix_cache_hit_rate": None, "p99_ttft_ms": None, "pool": []}
    base = {"v": 1, "engine": 0, "time_s": 0.0, "routed": []}
    FleetFrame(**base, replicas=[row])
    FleetFrame(**base, replicas=[], pools={"prefill": [row], "decode": [row]}, transfers=[])
    for bad in ({"replicas": [row], "pools": {"prefill": [row]}}, {"replicas": []}):
        with pytest.raises(ValidationError):
            FleetFrame(**base, **bad)
