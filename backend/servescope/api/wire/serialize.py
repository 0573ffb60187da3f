"""The only bridge from core records to the wire: packs records against the stream state
(api/wire/stream_state.py) and unpacks them again (docs/protocol.md, "Packed records")."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

from servescope.api.wire.drafts import pack_drafts, unpack_drafts
from servescope.api.wire.keys import CARRIED, KV_LISTS, LISTS
from servescope.api.wire.stream_state import StreamState
from servescope.core.request import RequestSpec
from servescope.core.request_table import RequestTable

KNOWN = frozenset((
    "step", "iter", "time_s", "step_time_ms", "arrivals", "scheduled", "new", "resumed",
    "preempted", "finished", "released", "rejected", "new_blocks", "freed_blocks", "kv_events",
    "num_cached_tokens", "running", "waiting", "num_free_blocks", "num_usable_blocks",
    "kv_usage", "token_budget", "max_num_seqs", "kv_waste", "waiting_for_kv", "kv_arrived"))


def dumps(value: Any) -> str:
    """Compact JSON, as every packed record and keyframe is stored and sent."""
    return json.dumps(value, separators=(",", ":"), allow_nan=False)


def ref_json(state: StreamState, rid: str) -> str:
    """A request's reference as JSON text: its index (or, not in the list, its id)."""
    ref = state.ref(rid)
    return str(ref) if isinstance(ref, int) else dumps(ref)


def request_info(specs: Iterable[RequestSpec]) -> RequestTable:
    """The request list (id, prompt_len, output_len, arrival_s, arrival_step), as columns."""
    return RequestTable.from_specs(specs)


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


def changed(now: Any, before: Any) -> bool:
    """`now != before`, but a dict changes with the order of its keys too ("kd" names its values
    by position, so both ends must hold the same order)."""
    if isinstance(now, dict) and isinstance(before, dict):
        return list(now.items()) != list(before.items())
    return bool(now != before)


def waste_delta(before: Any, now: dict[str, Any]) -> list[Any] | None:
    """`kv_waste` as its changes to the one before, by position ("kd": each value, or None
    where it is the same); None where positions would not do: other keys or another order, a
    key that is a number (JavaScript orders those first) or a value that is None."""
    if (not isinstance(before, dict) or list(before) != list(now)
            or any(key.isdigit() for key in now) or None in now.values()):
        return None
    return [None if before[key] == value else value for key, value in now.items()]


def event_item(kind: int, blocks: list[int], ref: int | str | None) -> Any:
    """A packed cache event: [1 stored | 0 removed, [block ids], request], or, for one block
    removed by no request (an eviction: most events), the block id alone."""
    return blocks[0] if kind == 0 and len(blocks) == 1 and ref is None else [kind, blocks, ref]


def js_round6(x: float) -> float:
    """Rounding as the JavaScript decoder does it (Math.floor(x * 1e6 + 0.5) / 1e6)."""
    return math.floor(x * 1e6 + 0.5) / 1e6


def pack(state: StreamState, rec: dict[str, Any]) -> dict[str, Any]:
    """The packed form of `rec` (a to_dict() record) given `state`; then folds it in."""
    ref = state.ref
    out: dict[str, Any] = {"i": rec["iter"], "t": rec["time_s"], "ms": rec["step_time_ms"],
                           "nf": rec["num_free_blocks"]}
    if rec["step"] != state.step + 1:
        out["s"] = rec["step"]
    for key, name in (*LISTS, *KV_LISTS):
        if rec.get(name):
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
        if not changed(rec[name], state.carried[name]):
            continue
        delta = waste_delta(state.carried[name], rec[name]) if key == "kw" else None
        if delta is None:
            out[key] = rec[name]
        else:
            out["kd"] = delta
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
        rid, start, n, drafts = e["id"], e["start"], e["n"], e.get("drafts", 0)
        num_out = outputs.get(rid, 0)
        total = prompt.get(rid, 0) + num_out
        if (hits[rid] if rid in hits else computed.get(rid, 0)) != start:
            ss += [pos, start]
        if total - start + drafts != n:
            sn += [pos, n]
        if (start + n - drafts == total) != e["sampled"]:
            sm.append(pos)
        decode = n == 1 + drafts and start == total - 1 and num_out >= 1
        if decode != (e["kind"] == "decode"):
            sk.append(pos)
    for key, value in (("sn", sn), ("ss", ss), ("sm", sm), ("sk", sk)):
        if value:
            out[key] = value
    pack_drafts(sched, state.last, out)


def _pack_blocks(state: StreamState, rec: dict[str, Any], out: dict[str, Any]) -> None:
    if rec["new_blocks"]:
        flat: list[int | str] = []
        for rid, blocks in rec["new_blocks"].items():
            flat += [state.ref(rid), len(blocks), *blocks]
        out["nb"] = flat
    if rec["freed_blocks"]:
        out["fb"] = list(rec["freed_blocks"])
    if rec["kv_events"]:
        out["ke"] = [event_item(1 if ev["type"] == "BlockStored" else 0, list(ev["block_ids"]),
                                None if ev["req"] is None else state.ref(ev["req"]))
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
    if any(key in p for key, _ in KV_LISTS):  # both, as StepRecord.to_dict() gives them
        for key, name in KV_LISTS:
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
                        for kind, ids, req in map(_event, p.get("ke", []))]
    rec["num_free_blocks"] = p["nf"]
    for key, name in CARRIED:
        rec[name] = p[key] if key in p else state.carried[name]
    if "kd" in p:
        before = state.carried["kv_waste"]
        rec["kv_waste"] = {key: before[key] if value is None else value
                           for key, value in zip(before, p["kd"], strict=True)}
    nu = rec["num_usable_blocks"]
    rec["kv_usage"] = p["ku"] if "ku" in p else js_round6(1 - p["nf"] / nu) if nu else 0.0
    rec.update(p.get("x", {}))
    state.apply(rec)
    return rec


def _event(item: Any) -> list[Any]:
    """A packed cache event as [kind, [block ids], request] (see event_item)."""
    return [0, [item], None] if isinstance(item, int) else item


def _unpack_scheduled(state: StreamState, p: dict[str, Any],
                      rec: dict[str, Any]) -> list[dict[str, Any]]:
    ids = [state.rid(r) for r in p["sc"]] if "sc" in p else rec["running"]
    starts = dict(zip(p.get("ss", [])[::2], p.get("ss", [])[1::2], strict=True))
    ns = dict(zip(p.get("sn", [])[::2], p.get("sn", [])[1::2], strict=True))
    flip_sampled, flip_kind = set(p.get("sm", [])), set(p.get("sk", []))
    spec = unpack_drafts(p, ids, state.last)
    out = []
    for pos, r in enumerate(ids):
        drafts = spec[pos][0] if spec else 0
        start, n, sampled, kind = state.predict_entry(r, starts.get(pos), ns.get(pos),
                                                      rec["num_cached_tokens"], drafts)
        if pos in flip_sampled:
            sampled = not sampled
        if pos in flip_kind:
            kind = "decode" if kind == "prefill" else "prefill"
        e = {"id": r, "n": n, "start": start, "sampled": sampled, "kind": kind}
        if spec:
            e["drafts"], e["accepted"] = spec[pos]
        out.append(e)
    return out


def _unpack_new_blocks(state: StreamState, flat: list[Any]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    k = 0
    while k < len(flat):
        count = flat[k + 1]
        out[state.rid(flat[k])] = list(flat[k + 2:k + 2 + count])
        k += 2 + count
    return out
