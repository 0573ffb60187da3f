"""The state a packed-record stream has built (the last keyframe plus every record after it)
and the predictions packing leaves out fields by; api/wire/keyframes.py snapshots it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from servescope.api.wire.drafts import entry_update
from servescope.api.wire.keys import CARRIED, STATUS
from servescope.core.request_table import request_table

PENDING, WAITING, RUNNING, PREEMPTED, FINISHED, REJECTED = range(len(STATUS))


class StreamState:
    """What a reader knows after a keyframe and the records since: the encoder and the
    decoder keep one each and predict the next record from it."""

    def __init__(self, requests: Sequence[Mapping[str, Any]]) -> None:
        table = request_table(requests)  # a RequestTable's lookups are shared, not copied
        self.table = table
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
        # The per-request columns of the last keyframe, and the requests whose values may have
        # changed since (a keyframe updates only those: most of a long trace is done or to come)
        self.columns: dict[str, np.ndarray] | None = None
        self.touched: set[str] = set()
        # each request's final computed and output counts by the list (api/wire/keyframes.py)
        self.final_counts: tuple[np.ndarray, np.ndarray] | None = None

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
                      hits: dict[str, int], drafts: int = 0) -> tuple[int, int, bool, str]:
        """(start, n, sampled, kind) of a scheduled entry; `n` counts its drafts."""
        total = self.num_tokens(rid)
        if start is None:
            start = hits[rid] if rid in hits else self.computed.get(rid, 0)
        if n is None:
            n = total - start + drafts
        decode = n == 1 + drafts and start == total - 1 and self.outputs.get(rid, 0) >= 1
        return start, n, start + n - drafts == total, "decode" if decode else "prefill"

    # -- folding a record in --

    def apply(self, rec: dict[str, Any]) -> None:
        self.touched.update(rec["arrivals"], rec["preempted"], rec["new"], rec["resumed"],
                            rec["num_cached_tokens"], [e["id"] for e in rec["scheduled"]],
                            rec["finished"], [r["id"] for r in rec["rejected"]])
        for rid in rec["arrivals"]:
            self.status[rid] = WAITING
        for rid in rec["preempted"]:
            self.preemptions[rid] = self.preemptions.get(rid, 0) + 1
            if self.status.get(rid) == FINISHED:
                # (async scheduling) preempted with its last token in flight: that token came
                # in the update the previous record carries, which finished it from the queue
                continue
            self.status[rid] = PREEMPTED
            self.computed[rid] = 0
            self.tables.pop(rid, None)
        for rid in (*rec["new"], *rec["resumed"]):
            self.status[rid] = RUNNING
        self.cached_tokens.update(rec["num_cached_tokens"])
        for e in rec["scheduled"]:
            rid = e["id"]
            num_output = self.outputs.get(rid, 0)
            self.computed[rid], kept = entry_update(
                e, num_output, self.table.output_len_of(rid) if "drafts" in e else None)
            if e["sampled"]:
                self.outputs[rid] = num_output + kept
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
        self.set_last(rec)

    def set_last(self, rec: dict[str, Any]) -> None:
        """`rec` as the last record: its index, step clock and carried values."""
        self.last, self.iter, self.step = rec, rec["iter"], rec["step"]
        for _, name in CARRIED:
            self.carried[name] = rec[name]
