"""An engine's step record packed from its columns (api/records/step_pack.py) is the text `pack`
makes of its to_dict(), and folds the same cache events into the stream state, whatever its events:
an eviction alone travels as its block id, any other event whole (docs/protocol.md, `ke`)."""

from __future__ import annotations

import dataclasses
import json

from servescope.api.records.step_pack import pack_step
from servescope.api.wire.serialize import dumps, pack, request_info, unpack
from servescope.api.wire.stream_state import StreamState
from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.records import BlockEvent
from servescope.scenarios.workloads import preset_workload


def test_a_step_record_packs_as_its_dict_packs_whatever_its_cache_events() -> None:
    w = preset_workload("demo")
    config = EngineConfig.from_dict(w.base_config)
    record = next(iter(Engine(config, w.specs).run()))
    rid = record.running[0]
    events = (BlockEvent("removed", (5,)), BlockEvent("removed", (6,)),  # evictions
              BlockEvent("stored", (7, 8), rid), BlockEvent("removed", (9,), rid),
              BlockEvent("removed", (10, 11)), BlockEvent("removed", (12,)),  # a mixed stretch
              BlockEvent("stored", (12,), rid), BlockEvent("removed", (13,)))
    record = dataclasses.replace(record, block_events=events)
    by_columns, by_dict = StreamState(request_info(w.specs)), StreamState(request_info(w.specs))
    _, text = pack_step(by_columns, record, 0)
    rec = record.to_dict()
    assert text == dumps(pack(by_dict, rec))
    assert by_columns.cached == by_dict.cached == {7, 8, 12}
    ke = json.loads(text)["ke"]
    ref = w.specs.index(next(s for s in w.specs if s.id == rid))  # its place in the list
    assert ke[:2] == [5, 6] and ke[3] == [0, [9], ref] and ke[4] == [0, [10, 11], None]
    assert ke[5] == 12 and ke[7] == 13
    assert unpack(StreamState(request_info(w.specs)), json.loads(text))["kv_events"] == \
        rec["kv_events"]
