"""Replay of vLLM KV-cache event captures (`--kv-events-config`, msgpack): a file of concatenated
KVEventBatch messages, as [ts, events, dp_rank?] arrays or {ts, events, ...} maps, or as captured
ZMQ frames [topic, seq, payload]. Events come as maps with a `type` key (current vLLM) or as
arrays with the tag first (older): BlockStored, BlockRemoved, AllBlocksCleared.

Events describe prefix-cache contents, not request block tables: each cached hash is shown in a
slot (the lowest free one), held by a placeholder ("~cache0", ...; steps_pool), so the pool view
is the cache over time. One record per batch.
Needs msgpack (`pip install msgpack`), for this format only.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from servescope.core.records import BlockEvent, StepRecord
from servescope.traces._io import open_binary
from servescope.traces._records import make_record
from servescope.traces.errors import TraceDependencyError, TraceFormatError, shown
from servescope.traces.report import TraceReport
from servescope.traces.steps_pool import Holders

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
EVENT_FIELDS = {  # positional layout after the tag, as vLLM's msgspec structs declare them
    "BlockStored": ("block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id",
                    "medium"),
    "BlockRemoved": ("block_hashes", "medium"),
    "AllBlocksCleared": (),
}
NOTE = ("KV events show prefix-cache contents: blocks are cache slots, not request block "
        "tables, and there is no batch composition")
UNKNOWN = ("requests and what each step scheduled", "step times",
           "which request holds each cached block (drawn unattributed, ~cache)",
           "the token budget and max_num_seqs",
           "the pool size (the peak number of cached blocks unless given)")


def _msgpack() -> Any:
    try:
        import msgpack
    except ImportError:
        raise TraceDependencyError("reading vLLM KV-event captures needs msgpack: "
                                   "pip install msgpack") from None
    return msgpack


def batches(path: Path) -> Iterator[tuple[int, float, list[dict[str, Any]]]]:
    """(message number, ts, events as dicts with a "type" key), streamed."""
    msgpack = _msgpack()
    with open_binary(path) as handle:
        unpacker = msgpack.Unpacker(handle, raw=False, strict_map_key=False,
                                    max_buffer_size=MAX_MESSAGE_BYTES)
        number = 0
        consumed = 0  # offset just past the last complete message
        while True:
            number += 1
            try:
                message = unpacker.unpack()
                consumed = unpacker.tell()
            except msgpack.OutOfData:
                if consumed < _size(handle):
                    raise TraceFormatError(number, "", "truncated msgpack message") from None
                return
            except (ValueError, TypeError, msgpack.UnpackException, msgpack.ExtraData) as err:
                raise TraceFormatError(number, "", f"not msgpack: {err}") from None
            yield (number, *_batch(message, number, msgpack))


def _size(handle: Any) -> int:
    position = handle.tell()
    handle.seek(0, 2)
    size = handle.tell()
    handle.seek(position)
    return int(size)


def _batch(message: Any, number: int, msgpack: Any) -> tuple[float, list[dict[str, Any]]]:
    if isinstance(message, list) and len(message) == 3 and isinstance(message[2], bytes):
        try:  # a captured ZMQ multipart message: [topic, seq, payload]
            message = msgpack.unpackb(message[2], raw=False, strict_map_key=False)
        except (ValueError, TypeError, msgpack.UnpackException, msgpack.ExtraData) as err:
            raise TraceFormatError(number, "payload", f"not msgpack: {err}") from None
    if isinstance(message, dict):
        ts, events = message.get("ts"), message.get("events")
    elif isinstance(message, list) and len(message) >= 2:
        ts, events = message[0], message[1]
    else:
        raise TraceFormatError(number, "", "expected a KVEventBatch [ts, events, dp_rank]")
    if isinstance(ts, bool) or not isinstance(ts, int | float):
        raise TraceFormatError(number, "ts", f"expected a number, got {shown(ts)}")
    if not isinstance(events, list):
        raise TraceFormatError(number, "events", "expected a list of events")
    return float(ts), [_event(e, number, k) for k, e in enumerate(events)]


def _event(event: Any, number: int, k: int) -> dict[str, Any]:
    if isinstance(event, list) and event and isinstance(event[0], str):
        fields = EVENT_FIELDS.get(event[0])
        if fields is None:
            raise TraceFormatError(number, f"events[{k}]", f"unknown event {shown(event[0])}")
        event = {"type": event[0], **dict(zip(fields, event[1:], strict=False))}
    if not isinstance(event, dict) or event.get("type") not in EVENT_FIELDS:
        raise TraceFormatError(number, f"events[{k}]", "expected BlockStored, BlockRemoved or "
                               "AllBlocksCleared (a map with 'type' or an array, tag first)")
    hashes = event.get("block_hashes", [])
    if not isinstance(hashes, list):
        raise TraceFormatError(number, f"events[{k}].block_hashes", "expected a list")
    event["block_hashes"] = [_hash(h, number, k) for h in hashes]
    return event


def _hash(value: Any, number: int, k: int) -> str:
    """Hashes are unsigned 64-bit ints (or bytes in newer vLLM): strings, so JS keeps them."""
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise TraceFormatError(number, f"events[{k}].block_hashes", f"bad hash {shown(value)}")


class CacheSlots:
    """Cached hashes in slots 1..N; a stored hash takes the lowest free slot. `touched` maps
    each slot changed since `begin()` to whether it was in use before, so a batch costs what
    its events cost, not the size of the cache."""

    def __init__(self, num_slots: int | None) -> None:
        self.num_slots = num_slots
        self.slot_of: dict[str, int] = {}
        self.used: set[int] = set()
        self.touched: dict[int, bool] = {}
        self._free: list[int] = []
        self._next = 1
        self.peak = 0

    def begin(self) -> None:
        self.touched = {}

    def store(self, digest: str) -> int | None:
        if digest in self.slot_of:
            return None
        if self._free:
            slot = heapq.heappop(self._free)
        else:
            slot, self._next = self._next, self._next + 1
        self.touched.setdefault(slot, False)
        self.slot_of[digest] = slot
        self.used.add(slot)
        self.peak = max(self.peak, len(self.slot_of))
        return slot

    def remove(self, digest: str) -> int | None:
        slot = self.slot_of.pop(digest, None)
        if slot is not None:
            self.touched.setdefault(slot, True)
            self.used.discard(slot)
            heapq.heappush(self._free, slot)
        return slot


def read(path: Path, report: TraceReport, num_blocks: int | None = None,
         medium: str = "GPU") -> Iterator[StepRecord]:
    """`num_blocks` is the pool drawn (default: the peak number of cached blocks, found by a
    first pass over the file). Events of another `medium` (CPU offload tiers) are skipped."""
    report.note(NOTE)
    if num_blocks is None:
        num_blocks = max(1, _peak(path, medium))
    report.meta.update(num_blocks=num_blocks, unknown=list(UNKNOWN))
    slots, holders = CacheSlots(num_blocks), Holders("~cache")
    first: float | None = None
    for number, ts, events in batches(path):
        first = ts if first is None else first
        slots.begin()
        stored, removed = _apply(slots, events, medium, report)
        if len(slots.slot_of) > num_blocks:
            raise TraceFormatError(number, "events", f"{len(slots.slot_of)} blocks cached, "
                                   f"more than num_blocks={num_blocks}")
        report.num_rows += 1
        report.num_yielded += 1
        was_used, used = slots.touched, slots.used
        # applied as removed-then-stored, so a slot stored and evicted within the batch is
        # in neither, and one evicted and refilled with another hash is in both
        removed = _unique(s for s in removed if was_used[s])
        stored = _unique(s for s in stored if s in used)
        block_events = tuple(BlockEvent(kind, tuple(ids)) for kind, ids in
                             (("removed", removed), ("stored", stored)) if ids)
        new_blocks, released = holders.update(
            sorted(s for s, was in was_used.items() if not was and s in used),
            sorted(s for s, was in was_used.items() if was and s not in used))
        yield make_record(step=number - 1, iter=number - 1, time_s=ts - first, step_time_ms=0.0,
                          scheduled=(), num_free_blocks=num_blocks - len(used),
                          num_usable_blocks=num_blocks, token_budget=0, max_num_seqs=0,
                          block_events=block_events, freed_blocks=tuple(removed),
                          new_blocks=new_blocks, released=released)


def _unique(slots: Iterator[int]) -> list[int]:
    return list(dict.fromkeys(slots))


def _apply(slots: CacheSlots, events: list[dict[str, Any]], medium: str,
           report: TraceReport | None) -> tuple[list[int], list[int]]:
    stored: list[int] = []
    removed: list[int] = []
    for event in events:
        if (event.get("medium") or "GPU") != medium:
            if report is not None:
                report.skip(f"medium_{event.get('medium')}")
            continue
        if event["type"] == "AllBlocksCleared":
            removed += [s for d in list(slots.slot_of) if (s := slots.remove(d)) is not None]
        for digest in event["block_hashes"]:
            slot = slots.store(digest) if event["type"] == "BlockStored" else slots.remove(digest)
            if slot is not None:
                (stored if event["type"] == "BlockStored" else removed).append(slot)
            elif report is not None:
                report.skip("duplicate_store" if event["type"] == "BlockStored"
                            else "unknown_removed")
    if "block_size" not in (report.meta if report else {}):
        sizes = [e["block_size"] for e in events if isinstance(e.get("block_size"), int)]
        if sizes and report is not None:
            report.meta["block_size"] = sizes[0]
    return stored, removed


def _peak(path: Path, medium: str) -> int:
    slots = CacheSlots(None)
    for _, _, events in batches(path):
        _apply(slots, events, medium, None)
    return slots.peak
