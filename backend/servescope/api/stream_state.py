"""The state a packed-record stream has built (the last keyframe plus every record after it),
the predictions packing leaves out fields by, and keyframes: snapshots of that state
(docs/protocol.md, "Keyframe")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from servescope.api import protocol as P
from servescope.api.compact import compact_keyframe, expand_keyframe
from servescope.api.wire_keys import CARRIED, STATUS
from servescope.core.request_table import request_table

PENDING, WAITING, RUNNING, PREEMPTED, FINISHED, REJECTED = range(len(STATUS))


class StreamState:
    """What a reader knows after a keyframe and the records since: the encoder and the
    decoder keep one each and predict the next record from it."""

    def __init__(self, requests: Sequence[Mapping[str, Any]]) -> None:
        table = request_table(requests)  # a RequestTable's lookups are shared, not copied
        self.ids = table.ids
        self.index = table.positions
        self.prompt_len = table.prompt_lengths
        self.status: dict[str, int] = {}
        self.computed: dict[str, int] = {}
        self.outputs: dict[str, int] = {}
        self.cached_tokens: dict[str, int] = {}
        self.preemptions: dict[str, int] = {}
        self.tables: dict[str, list[int]] = {}
        self.cached: set[int] = set()
        self.running: list[str] = []  # after the update: finished requests removed
        self.waiting: list[str] = []
        self.last: dict[str, Any] | None = None
        self.iter = -1
        self.step = -1
        self.carried: dict[str, Any] = {name: None for _, name in CARRIED}

    def ref(self, rid: str) -> int | str:
        return self.index.get(rid, rid)

    def rid(self, ref: int | str) -> str:
        return self.ids[ref] if isinstance(ref, int) else ref

    def num_tokens(self, rid: str) -> int:
        return self.prompt_len.get(rid, 0) + self.outputs.get(rid, 0)

    # -- predictions (mirrored in frontend/static/js/transport/decode.js) --

    def predict_queues(self, rec: dict[str, Any]) -> tuple[list[str], list[str]]:
        gone = set(rec["preempted"])
        admitted = set(rec["new"]) | set(rec["resumed"])
        rejected = {r["id"] for r in rec["rejected"]}
        queue = self.waiting + list(rec["arrivals"])
        running = [r for r in self.running if r not in gone] + [r for r in queue if r in admitted]
        waiting = list(reversed(rec["preempted"])) + [
            r for r in queue if r not in admitted and r not in rejected]
        return running, waiting

    def predict_entry(self, rid: str, start: int | None, n: int | None,
                      hits: dict[str, int]) -> tuple[int, int, bool, str]:
        total = self.num_tokens(rid)
        if start is None:
            start = hits[rid] if rid in hits else self.computed.get(rid, 0)
        if n is None:
            n = total - start
        decode = n == 1 and start == total - 1 and self.outputs.get(rid, 0) >= 1
        return start, n, start + n == total, "decode" if decode else "prefill"

    # -- folding a record in --

    def apply(self, rec: dict[str, Any]) -> None:
        for rid in rec["arrivals"]:
            self.status[rid] = WAITING
        for rid in rec["preempted"]:
            self.status[rid] = PREEMPTED
            self.computed[rid] = 0
            self.preemptions[rid] = self.preemptions.get(rid, 0) + 1
            self.tables.pop(rid, None)
        for rid in (*rec["new"], *rec["resumed"]):
            self.status[rid] = RUNNING
        self.cached_tokens.update(rec["num_cached_tokens"])
        for e in rec["scheduled"]:
            self.computed[e["id"]] = e["start"] + e["n"]
            if e["sampled"]:
                self.outputs[e["id"]] = self.outputs.get(e["id"], 0) + 1
        for rid, blocks in rec["new_blocks"].items():
            self.tables.setdefault(rid, []).extend(blocks)
        for ev in rec["kv_events"]:
            (self.cached.update if ev["type"] == "BlockStored" else self.cached.difference_update)(
                ev["block_ids"])
        finished = set(rec["finished"])
        for rid in rec["finished"]:
            self.status[rid] = FINISHED
        for rid in rec["released"]:
            self.tables.pop(rid, None)
        for r in rec["rejected"]:
            self.status[r["id"]] = REJECTED
        self.running = [r for r in rec["running"] if r not in finished]
        self.waiting = list(rec["waiting"])
        self.last, self.iter, self.step = rec, rec["iter"], rec["step"]
        for _, name in CARRIED:
            self.carried[name] = rec[name]


def keyframe(state: StreamState, engine: int, num_gpu_blocks: int) -> P.Keyframe:
    """The columnar keyframe message for the state after record `state.iter`, compacted (built
    unvalidated: a big pool's columns are long, and the tests validate what is sent)."""
    ids, ref = state.ids, state.ref
    owner: list[int | str | None] = [None] * num_gpu_blocks
    refs = [0] * num_gpu_blocks
    for rid, blocks in state.tables.items():
        for b in blocks:
            if 0 <= b < num_gpu_blocks:
                if refs[b] == 0:
                    owner[b] = ref(rid)
                refs[b] += 1
    last = state.last
    return P.Keyframe.model_construct(**compact_keyframe({
        "engine": engine, "iter": state.iter,
        "step": last["step"] if last else 0, "time_s": last["time_s"] if last else 0.0,
        "status": [state.status.get(r, PENDING) for r in ids],
        "num_computed_tokens": [state.computed.get(r, 0) for r in ids],
        "num_output_tokens": [state.outputs.get(r, 0) for r in ids],
        "num_cached_tokens": [max(0, state.cached_tokens.get(r, 0)) for r in ids],
        "num_preemptions": [state.preemptions.get(r, 0) for r in ids],
        "tables": [(ref(rid), list(blocks)) for rid, blocks in state.tables.items()],
        "block_owner": owner, "block_ref_count": refs, "cached_blocks": sorted(state.cached),
        "running": [ref(r) for r in state.running], "waiting": [ref(r) for r in state.waiting],
        "record": last,
    }))


def load_keyframe(requests: Sequence[Mapping[str, Any]], kf: dict[str, Any]) -> StreamState:
    """A StreamState equal to the one the keyframe was taken from (for decoding after it)."""
    kf = expand_keyframe(kf)
    state = StreamState(requests)
    for k, r in enumerate(state.ids):
        if kf["status"][k] != PENDING:
            state.status[r] = kf["status"][k]
        for col, target in (("num_computed_tokens", state.computed),
                            ("num_output_tokens", state.outputs),
                            ("num_cached_tokens", state.cached_tokens),
                            ("num_preemptions", state.preemptions)):
            if kf[col][k]:
                target[r] = kf[col][k]
    state.tables = {state.rid(r): list(b) for r, b in kf["tables"]}
    state.cached = set(kf["cached_blocks"])
    state.running = [state.rid(r) for r in kf["running"]]
    state.waiting = [state.rid(r) for r in kf["waiting"]]
    if kf["record"] is not None:
        state.last, state.iter, state.step = kf["record"], kf["iter"], kf["record"]["step"]
        for _, name in CARRIED:
            state.carried[name] = kf["record"][name]
    return state
