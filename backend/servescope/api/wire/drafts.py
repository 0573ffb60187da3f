"""Speculative decoding on the wire: each scheduled entry's `drafts` and `accepted` (present
only when the run speculates), packed against the last record, and the count an entry's update
leaves computed (docs/protocol.md, "Packed records": `sd`, `sa`, `sz`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from servescope.observability.spec_decode import kept_tokens, tokens_out


def computed_after(e: Mapping[str, Any]) -> int:
    """`num_computed_tokens` after the entry's update: its rejected drafts rolled back
    (update_from_output: num_computed_tokens -= num_draft_tokens - num_accepted)."""
    accepted = e.get("accepted", 0)
    rejected = e.get("drafts", 0) - accepted if accepted >= 0 else 0
    return int(e["start"] + e["n"] - rejected)


def entry_update(e: Mapping[str, Any], num_output: int,
                 output_len: int | None) -> tuple[int, int]:
    """(num_computed_tokens after the entry's update, output tokens it keeps): a speculating
    entry's tokens stop at the request's output length, and the cut ones come off the computed
    count too (vllm/v1/core/sched/scheduler.py, _update_request_with_output)."""
    kept = kept_tokens(e, num_output, output_len)
    return computed_after(e) - (tokens_out(e) - kept), kept


def last_drafts(last: Mapping[str, Any] | None) -> dict[str, int]:
    """Each request's drafts in the last record: the prediction of its drafts in this one."""
    if last is None:
        return {}
    return {e["id"]: e["drafts"] for e in last["scheduled"] if e.get("drafts")}


def pack_drafts(sched: list[dict[str, Any]], last: Mapping[str, Any] | None,
                out: dict[str, Any]) -> None:
    """`sd`: drafts exceptions [pos, drafts, ...] (sent, even empty, whenever the entries carry
    drafts); `sa`: `accepted` of each entry with drafts, in order; `sz`: [pos, accepted, ...]
    for an entry without drafts whose `accepted` is not 0."""
    if not sched or "drafts" not in sched[0]:
        return
    predicted = last_drafts(last)
    sd: list[int] = []
    sa: list[int] = []
    sz: list[int] = []
    for pos, e in enumerate(sched):
        if e["drafts"] != predicted.get(e["id"], 0):
            sd += [pos, e["drafts"]]
        if e["drafts"]:
            sa.append(e["accepted"])
        elif e["accepted"]:
            sz += [pos, e["accepted"]]
    out["sd"] = sd
    for key, value in (("sa", sa), ("sz", sz)):
        if value:
            out[key] = value


def unpack_drafts(p: Mapping[str, Any], ids: list[str],
                  last: Mapping[str, Any] | None) -> list[tuple[int, int]] | None:
    """Each scheduled entry's (drafts, accepted) from `p`; None where the entries carry none."""
    if "sd" not in p:
        return None
    predicted = last_drafts(last)
    sd = dict(zip(p["sd"][::2], p["sd"][1::2], strict=True))
    sz = dict(zip(p.get("sz", [])[::2], p.get("sz", [])[1::2], strict=True))
    accepted = iter(p.get("sa", []))
    out = []
    for pos, rid in enumerate(ids):
        drafts = sd.get(pos, predicted.get(rid, 0))
        out.append((drafts, next(accepted) if drafts else sz.get(pos, 0)))
    return out
