import sys

import pytest
from support.trace_load import load

from servescope.core.records import BlockTables
from servescope.traces.errors import TraceDependencyError, TraceFormatError

msgpack = pytest.importorskip("msgpack")


def pack(*messages):
    return b"".join(msgpack.packb(m) for m in messages)


def stored_array(hashes, parent=None):  # the older positional layout, tag first
    return ["BlockStored", hashes, parent, list(range(16 * len(hashes))), 16, None, None]


def test_array_layout_shows_cache_contents_over_time(write):
    path = write("kv.bin", pack([10.0, [stored_array([11, 12, 13])], 0],
                                [10.5, [["BlockRemoved", [12], None], stored_array([14], 13)], 0],
                                [11.0, [["AllBlocksCleared"]], 0]))
    records, report = load(path, "vllm-kv-events")
    assert [r.time_s for r in records] == [0.0, 0.5, 1.0]
    assert [(e.kind, e.block_ids) for e in records[0].block_events] == [("stored", (1, 2, 3))]
    # 12 leaves slot 2; 14 takes the lowest free slot, 2 again
    assert [(e.kind, e.block_ids) for e in records[1].block_events] == [("removed", (2,)),
                                                                        ("stored", (2,))]
    assert sorted(records[2].block_events[0].block_ids) == [1, 2, 3]
    assert report.meta["num_blocks"] == 3 and report.meta["block_size"] == 16
    assert any("request" in what for what in report.meta["unknown"])
    assert [r.num_free_blocks for r in records] == [0, 0, 3]
    assert report.notes


def test_map_layout_zmq_frames_bytes_hashes_and_other_media(write):
    batch = {"ts": 1.0, "events": [
        {"type": "BlockStored", "block_hashes": [b"\x01\x02", 2**64 - 1], "parent_block_hash": None,
         "token_ids": [], "block_size": 32},
        {"type": "BlockStored", "block_hashes": [5], "medium": "CPU"},
        {"type": "BlockRemoved", "block_hashes": [999]}], "data_parallel_rank": 0}
    frame = ["kv-events", (7).to_bytes(8, "big"), msgpack.packb(batch)]
    records, report = load(write("kv.bin", pack(frame)), "vllm-kv-events", num_blocks=8)
    assert records[0].block_events[0].block_ids == (1, 2)
    assert records[0].num_free_blocks == 6 and records[0].num_usable_blocks == 8
    assert report.skipped == {"medium_CPU": 1, "unknown_removed": 1}
    assert report.meta["block_size"] == 32


@pytest.mark.parametrize("messages, line, field", [
    ([[1.0, []], "hello"], 2, ""),
    ([[1.0, []], [2.0, [["BlockMoved", [1]]]]], 2, "events[0]"),
    ([["x", []]], 1, "ts"),
    ([[1.0, [{"type": "BlockStored", "block_hashes": [1.5]}]]], 1, "events[0].block_hashes"),
])
def test_bad_messages_name_the_message_and_field(write, messages, line, field):
    with pytest.raises(TraceFormatError) as info:
        load(write("kv.bin", pack(*messages)), "vllm-kv-events", num_blocks=4)
    assert (info.value.line, info.value.field) == (line, field)


def test_truncated_capture(write):
    data = pack([1.0, [stored_array([1])]], [2.0, [stored_array([2])]])
    with pytest.raises(TraceFormatError) as info:
        load(write("kv.bin", data[:-3]), "vllm-kv-events", num_blocks=4)
    assert info.value.line == 2


def test_clear_error_without_msgpack(write, monkeypatch):
    path = write("kv.bin", pack([1.0, []]))
    monkeypatch.setitem(sys.modules, "msgpack", None)
    with pytest.raises(TraceDependencyError, match="pip install msgpack"):
        load(path, "vllm-kv-events", num_blocks=4)


def test_cached_slots_are_held_by_placeholders_and_a_stored_then_evicted_slot_is_not(write):
    path = write("kv.bin", pack([0.0, [stored_array([1, 2])]],
                                [1.0, [stored_array([3]), ["BlockRemoved", [3, 1], None]]],
                                [2.0, [["BlockRemoved", [2], None]]]))
    records, _ = load(path, "vllm-kv-events")
    # batch 2: hash 3 is stored in slot 3 and evicted at once, hash 1 leaves slot 1
    assert [(e.kind, e.block_ids) for e in records[1].block_events] == [("removed", (1,))]
    folded = BlockTables()
    for r in records:
        folded.apply(r)
        folded.after_update(r)
        assert len([b for t in folded.tables.values() for b in t]) == r.num_usable_blocks - \
            r.num_free_blocks
    assert [sorted(b for t in folded.tables.values() for b in t)] == [[]]
