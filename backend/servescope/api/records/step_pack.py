"""An engine's step record (core/records.py) packed as `pack` packs its to_dict()
(api/wire/serialize.py), with its prefix-cache events written as text and folded into the stream
state a stretch of one kind at a time. A prefill step evicts one block an event (57 events a
step record on the Azure conversation trace): building, packing, dumping and folding each as a
dict was over a third of what storing the record cost."""

from __future__ import annotations

from itertools import groupby
from operator import itemgetter
from typing import Any

from servescope.api.wire.keys import CARRIED
from servescope.api.wire.serialize import dumps, event_item, pack, ref_json
from servescope.api.wire.stream_state import StreamState
from servescope.core.records import BlockEvent, StepRecord

AFTER_KE = ("ct", *(key for key, _ in CARRIED), "kd", "ku", "x")  # pack's keys after "ke"


def pack_step(state: StreamState, record: StepRecord, n: int) -> tuple[dict[str, Any], str]:
    """Record `n` of a track: its to_dict() with "kv_events" left empty (`event_dicts()` has
    them), and its packed text; folded into `state` as `pack` folds it."""
    rec = record.to_dict(events=False)
    rec["iter"] = n
    out = pack(state, rec)
    events = record.block_events
    if not events:
        return rec, dumps(out)
    tail = {key: out.pop(key) for key in AFTER_KE if key in out}
    ke = ",".join(_fold_events(state, events))
    text = f'{dumps(out)[:-1]},"ke":[{ke}]' + (f",{dumps(tail)[1:]}" if tail else "}")
    return rec, text


def _fold_events(state: StreamState, events: tuple[BlockEvent, ...]) -> list[str]:
    """Fold the events into the state's cached blocks, a stretch of one kind at a time; their
    packed texts (a stretch of evictions, one block and no request each, in one join)."""
    texts: list[str] = []
    for kind, stretch in groupby(events, key=itemgetter(0)):
        same = list(stretch)
        blocks = [block for event in same for block in event.block_ids]
        if kind == "stored":
            state.cached.update(blocks)
        else:
            state.cached.difference_update(blocks)
            if len(blocks) == len(same) and all(event.request_id is None for event in same):
                texts.append(",".join(map(str, blocks)))  # evictions: each a bare block id
                continue
        texts += [_event_text(state, event) for event in same]
    return texts


def _event_text(state: StreamState, event: BlockEvent) -> str:
    """dumps(event_item(...)) of the event."""
    kind, blocks, rid = event
    code = 1 if kind == "stored" else 0
    if isinstance(item := event_item(code, list(blocks), rid), int):
        return str(item)
    req = "null" if rid is None else ref_json(state, rid)
    return f"[{code},[{','.join(map(str, blocks))}],{req}]"
