"""The only bridge from core records to the wire: packs records against the stream state,
unpacks them again, and takes keyframes of that state (docs/protocol.md, "Packed records")."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from servescope.api.compact import compact_keyframe, expand_keyframe
from servescope.api.wire_keys import CARRIED, LISTS, STATUS
from servescope.core.request import RequestSpec

PENDING, WAITING, RUNNING, PREEMPTED, FINISHED, REJECTED = range(len(STATUS))

KNOWN = frozenset((
    "step", "iter", "time_s", "step_time_ms", "arrivals", "scheduled", "new", "resumed",
    "preempted", "finished", "released", "rejected", "new_blocks", "freed_blocks", "kv_events",
    "num_cached_tokens", "running", "waiting", "num_free_blocks", "num_usable_blocks",
    "kv_usage", "token_budget", "max_num_seqs", "kv_waste"))


def request_info(specs: Iterable[RequestSpec]) -> list[dict[str, Any]]:
    return [{"id": s.id, "prompt_len": s.prompt_len, "output_len": s.output_len,
             "arrival_s": s.arrival_s, "arrival_step": s.arrival_step} for s in specs]


def normalize(rec: dict[str, Any]) -> dict[str, Any]:
    """A record with every field the packer reads (recordings may predate some of them)."""
    out = dict(rec)
    for name in ("arrivals", "scheduled", "new", "resumed", "preempted", "finished", "rejected",
                 "freed_blocks", "kv_events", "running", "waiting"):
        out.setdefault(name, [])
    out.setdefault("released", list(out["finished"]))
    for name in ("new_blocks", "num_cached_tokens", "kv_waste"):
        out.setdefault(name, {})
    out.setdefault("step_time_ms", 0.0)
    out.setdefault("num_free_blocks", 0)
    out.setdefault("num_usable_blocks", 0)
    out.setdefault("token_budget", 0)
    out.setdefault("max_num_seqs", 0)
    usable = out["num_usable_blocks"]
    out.setdefault("kv_usage", round(1 - out["num_free_blocks"] / usable, 6) if usable else 0.0)
    return out


def js_round6(x: float) -> float:
    """Rounding as the JavaScript decoder does it (Math.floor(x * 1e6 + 0.5) / 1e6)."""
    return math.floor(x * 1e6 + 0.5) / 1e6


class StreamState:
    """What a reader knows after a keyframe and the records since: the encoder and the
    decoder keep one each and predict the next record from it."""

    def __init__(self, requests: Sequence[dict[str, Any]]) -> None:
        self.ids = [r["id"] for r in requests]
        self.index = {rid: i for i, rid in enumerate(self.ids)}
        self.prompt_len = {r["id"]: r["prompt_len"] for r in requests}
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


def pack(state: StreamState, rec: dict[str, Any]) -> dict[str, Any]:
    """The packed form of `rec` (a to_dict() record) given `state`; then folds it in."""
    ref = state.ref
    out: dict[str, Any] = {"i": rec["iter"], "t": rec["time_s"], "ms": rec["step_time_ms"],
                           "nf": rec["num_free_blocks"]}
    if rec["step"] != state.step + 1:
        out["s"] = rec["step"]
    for key, name in LISTS:
        if rec[name]:
            out[key] = [ref(r) for r in rec[name]]
    if rec["released"] != rec["finished"]:
        out["rl"] = [ref(r) for r in rec["released"]]
    if rec["rejected"]:
        out["rj"] = [[ref(r["id"]), r["reason"]] for r in rec["rejected"]]
    running, waiting = state.predict_queues(rec)
    if running != rec["running"]:
        out["rn"] = [ref(r) for r in rec["running"]]
    if waiting != rec["waiting"]:
        out["wt"] = [ref(r) for r in rec["waiting"]]
    _pack_scheduled(state, rec, out)
    _pack_blocks(state, rec, out)
    for key, name in CARRIED:
        if rec[name] != state.carried[name]:
            out[key] = rec[name]
    nu = rec["num_usable_blocks"]
    if (js_round6(1 - rec["num_free_blocks"] / nu) if nu else 0.0) != rec["kv_usage"]:
        out["ku"] = rec["kv_usage"]
    extra = {k: v for k, v in rec.items() if k not in KNOWN}
    if extra:
        out["x"] = extra
    state.apply(rec)
    return out


def _pack_scheduled(state: StreamState, rec: dict[str, Any], out: dict[str, Any]) -> None:
    """`predict_entry` inlined: this loop runs once per scheduled request per step."""
    sched = rec["scheduled"]
    if len(sched) != len(rec["running"]) or any(
            e["id"] != r for e, r in zip(sched, rec["running"], strict=True)):
        out["sc"] = [state.ref(e["id"]) for e in sched]
    hits, prompt, outputs, computed = (rec["num_cached_tokens"], state.prompt_len,
                                       state.outputs, state.computed)
    sn: list[int] = []
    ss: list[int] = []
    sm: list[int] = []
    sk: list[int] = []
    for pos, e in enumerate(sched):
        rid, start, n = e["id"], e["start"], e["n"]
        num_out = outputs.get(rid, 0)
        total = prompt.get(rid, 0) + num_out
        if (hits[rid] if rid in hits else computed.get(rid, 0)) != start:
            ss += [pos, start]
        if total - start != n:
            sn += [pos, n]
        if (start + n == total) != e["sampled"]:
            sm.append(pos)
        decode = n == 1 and start == total - 1 and num_out >= 1
        if decode != (e["kind"] == "decode"):
            sk.append(pos)
    for key, value in (("sn", sn), ("ss", ss), ("sm", sm), ("sk", sk)):
        if value:
            out[key] = value


def _pack_blocks(state: StreamState, rec: dict[str, Any], out: dict[str, Any]) -> None:
    if rec["new_blocks"]:
        flat: list[int | str] = []
        for rid, blocks in rec["new_blocks"].items():
            flat += [state.ref(rid), len(blocks), *blocks]
        out["nb"] = flat
    if rec["freed_blocks"]:
        out["fb"] = list(rec["freed_blocks"])
    if rec["kv_events"]:
        out["ke"] = [[1 if ev["type"] == "BlockStored" else 0, list(ev["block_ids"]),
                      None if ev["req"] is None else state.ref(ev["req"])]
                     for ev in rec["kv_events"]]
    if rec["num_cached_tokens"]:
        out["ct"] = [x for rid, n in rec["num_cached_tokens"].items() for x in (state.ref(rid), n)]


def unpack(state: StreamState, p: dict[str, Any]) -> dict[str, Any]:
    """The to_dict() record that `p` packs, given `state`; then folds it in."""
    rid = state.rid
    rec: dict[str, Any] = {"step": p.get("s", state.step + 1), "iter": p["i"], "time_s": p["t"],
                           "step_time_ms": p["ms"]}
    for key, name in LISTS:
        rec[name] = [rid(r) for r in p.get(key, [])]
    rec["released"] = [rid(r) for r in p["rl"]] if "rl" in p else list(rec["finished"])
    rec["rejected"] = [{"id": rid(r), "reason": why} for r, why in p.get("rj", [])]
    ct = p.get("ct", [])
    rec["num_cached_tokens"] = {rid(ct[k]): ct[k + 1] for k in range(0, len(ct), 2)}
    running, waiting = state.predict_queues(rec)
    rec["running"] = [rid(r) for r in p["rn"]] if "rn" in p else running
    rec["waiting"] = [rid(r) for r in p["wt"]] if "wt" in p else waiting
    rec["scheduled"] = _unpack_scheduled(state, p, rec)
    rec["new_blocks"] = _unpack_new_blocks(state, p.get("nb", []))
    rec["freed_blocks"] = list(p.get("fb", []))
    rec["kv_events"] = [{"type": "BlockStored" if kind else "BlockRemoved", "block_ids": ids,
                         "req": None if req is None else rid(req)}
                        for kind, ids, req in p.get("ke", [])]
    rec["num_free_blocks"] = p["nf"]
    for key, name in CARRIED:
        rec[name] = p[key] if key in p else state.carried[name]
    nu = rec["num_usable_blocks"]
    rec["kv_usage"] = p["ku"] if "ku" in p else js_round6(1 - p["nf"] / nu) if nu else 0.0
    rec.update(p.get("x", {}))
    state.apply(rec)
    return rec


def _unpack_scheduled(state: StreamState, p: dict[str, Any], rec: dict[str, Any]) -> list[dict]:
    ids = [state.rid(r) for r in p["sc"]] if "sc" in p else rec["running"]
    starts = dict(zip(p.get("ss", [])[::2], p.get("ss", [])[1::2], strict=True))
    ns = dict(zip(p.get("sn", [])[::2], p.get("sn", [])[1::2], strict=True))
    flip_sampled, flip_kind = set(p.get("sm", [])), set(p.get("sk", []))
    out = []
    for pos, r in enumerate(ids):
        start, n, sampled, kind = state.predict_entry(r, starts.get(pos), ns.get(pos),
                                                      rec["num_cached_tokens"])
        if pos in flip_sampled:
            sampled = not sampled
        if pos in flip_kind:
            kind = "decode" if kind == "prefill" else "prefill"
        out.append({"id": r, "n": n, "start": start, "sampled": sampled, "kind": kind})
    return out


def _unpack_new_blocks(state: StreamState, flat: list[Any]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    k = 0
    while k < len(flat):
        count = flat[k + 1]
        out[state.rid(flat[k])] = list(flat[k + 2:k + 2 + count])
        k += 2 + count
    return out


def keyframe(state: StreamState, engine: int, num_gpu_blocks: int) -> dict[str, Any]:
    """The columnar keyframe message for the state after record `state.iter`, compacted."""
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
    return compact_keyframe({
        "type": "keyframe", "v": 1, "engine": engine, "iter": state.iter,
        "step": last["step"] if last else 0, "time_s": last["time_s"] if last else 0.0,
        "status": [state.status.get(r, PENDING) for r in ids],
        "num_computed_tokens": [state.computed.get(r, 0) for r in ids],
        "num_output_tokens": [state.outputs.get(r, 0) for r in ids],
        "num_cached_tokens": [max(0, state.cached_tokens.get(r, 0)) for r in ids],
        "num_preemptions": [state.preemptions.get(r, 0) for r in ids],
        "tables": [[ref(rid), list(blocks)] for rid, blocks in state.tables.items()],
        "block_owner": owner, "block_ref_count": refs, "cached_blocks": sorted(state.cached),
        "running": [ref(r) for r in state.running], "waiting": [ref(r) for r in state.waiting],
        "record": last,
    })


def load_keyframe(requests: Sequence[dict[str, Any]], kf: dict[str, Any]) -> StreamState:
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
