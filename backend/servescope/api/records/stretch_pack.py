"""A decode stretch (core/decode_stretch.py) stored in bulk by a track (api/sessions/track.py): the
packed text, row columns, stream-state updates and meter observations that packing each of its
expanded records would give (api/wire/serialize.py, `pack`), built from the run's arrays.

Within a run nothing is admitted, preempted or rejected and every row decodes one token a step,
so after its first step each record packs to the same few fields: the clock, the free blocks,
the step's new blocks and cache events, the waste when it changed, and the finish at the end.
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import repeat
from typing import Any

import numpy as np

from servescope.api.records.run_store import Row
from servescope.api.wire.serialize import (
    changed,
    dumps,
    js_round6,
    normalize,
    ref_json,
    waste_delta,
)
from servescope.api.wire.stream_state import FINISHED, StreamState
from servescope.core.decode_stretch import DecodeStretch
from servescope.observability.meter import Meter

Event = tuple[int, int, tuple[int, ...]]  # (row, 1 stored | 0 removed, block ids)


class StretchPack:
    """One run's records as record `n0` onwards of a track, packed against the stream state
    before its first step; `apply` then folds its steps into that state, a stretch at a time."""

    def __init__(self, state: StreamState, run: DecodeStretch, n0: int) -> None:
        self.run, self.n0 = run, n0
        self.refs = [ref_json(state, rid) for rid in run.ids]
        self.time_s = [round(t, 9) for t in run.time_s[:-1].tolist()]
        self.step_ms = [round(ms, 6) for ms in run.step_time_ms.tolist()]
        self.end_s = [t + ms / 1000.0 for t, ms in zip(self.time_s, self.step_ms, strict=True)]
        nu = run.num_usable_blocks
        self.kv_usage = [round(1.0 - nf / nu, 6) for nf in run.num_free_blocks.tolist()]
        self.new_at = np.searchsorted(run.kv.steps, np.arange(run.num_steps + 1)).tolist()
        self.events = self._events()
        self.event_steps = sorted(self.events)
        self.waste = self._waste_values()
        self.texts = self._texts(state)

    def _events(self) -> dict[int, list[Event]]:
        """Each step's cache events, ordered as DecodeStretch._events orders them."""
        kv = self.run.kv
        events: dict[int, list[Event]] = {}
        for step, row, block in zip(kv.steps.tolist(), kv.rows.tolist(), kv.blocks, strict=True):
            if block in kv.evicted:
                events.setdefault(step, []).append((row, 0, (block,)))
        for step, row, done in kv.stored:
            events.setdefault(int(step), []).append((row, 1, tuple(done)))
        for items in events.values():
            items.sort(key=lambda item: (item[0], item[1]))
        return events

    def _waste_values(self) -> list[tuple[int, ...]]:
        columns = [values.tolist() for values in self.run.kv_waste.values()]
        return [tuple(map(int, v)) for v in zip(*columns, strict=True)] if columns else [
            ()] * self.run.num_steps

    def _texts(self, state: StreamState) -> list[str]:
        run, k, refs = self.run, self.run.num_steps, self.refs
        first, later = _flags(state, run)
        lead, flags, carried, fb = [""] * k, [later] * k, [""] * k, [""] * k
        lead[0], carried[0] = _first_fields(state, run, refs)
        flags[0] = first
        if run.finished:
            lead[-1] += f',"f":[{",".join(ref_json(state, r) for r in run.finished)}]'
        if run.freed_blocks:
            fb[-1] = f',"fb":{dumps(list(run.freed_blocks))}'
        at, entries = self.new_at, [f"{refs[row]},1,{block}" for row, block in zip(
            run.kv.rows.tolist(), run.kv.blocks, strict=True)]
        nb = {j: f',"nb":[{",".join(entries[at[j]:at[j + 1]])}]'
              for j in range(k) if at[j + 1] > at[j]}
        ke = {j: ',"ke":[' + ",".join(  # an eviction as its block id alone (event_item)
            f"[1,[{','.join(map(str, blocks))}],{refs[row]}]" if kind else str(blocks[0])
            for row, kind, blocks in items) + "]" for j, items in self.events.items()}
        kw = self._waste_fields(state.carried["kv_waste"])
        nu = run.num_usable_blocks
        ku = ["" if js_round6(1 - nf / nu) == usage else f',"ku":{usage!r}'
              for nf, usage in zip(run.num_free_blocks.tolist(), self.kv_usage, strict=True)]
        return [f'{{"i":{self.n0 + j},"t":{t!r},"ms":{ms!r},"nf":{nf}{lead[j]}{flags[j]}'
                f'{nb.get(j, "")}{fb[j]}{ke.get(j, "")}{carried[j]}{kw[j]}{ku[j]}}}'
                for j, (t, ms, nf) in enumerate(zip(self.time_s, self.step_ms,
                                                    run.num_free_blocks.tolist(), strict=True))]

    def _waste_fields(self, before: dict[str, int] | None) -> list[str]:
        """Where a step's waste differs from the step before's: "kd", its changes by position,
        or "kw", the whole of it, where positions do not do (pack's waste_delta)."""
        first = self.waste_dict(0)
        out = [""]
        if changed(first, before):
            delta = waste_delta(before, first)
            out[0] = f',"kw":{dumps(first)}' if delta is None else _delta_field(delta)
        values = self.waste
        out += [_delta_field([None if a == b else b for a, b in zip(prev, now, strict=True)])
                if now != prev else "" for prev, now in zip(values, values[1:], strict=False)]
        return out

    def waste_dict(self, j: int) -> dict[str, int]:
        return dict(zip(self.run.kv_waste, self.waste[j], strict=True))

    def rows(self, a: int, b: int, num_preempted: int) -> list[Row]:
        """The store's rows of steps a..b-1 (`num_preempted`: the track's preempted-waiting;
        nothing else waits in a stretch, nor for remote KV)."""
        run, num_rows = self.run, len(self.run.ids)
        return list(zip(range(self.n0 + a, self.n0 + b), range(run.step0 + a, run.step0 + b),
                        self.time_s[a:b], self.end_s[a:b], self.texts[a:b], repeat(num_rows),
                        repeat(num_rows), repeat(0), self.kv_usage[a:b], repeat(0),
                        repeat(num_rows), repeat(num_preempted), repeat(0)))

    def observe(self, meter: Meter, num_steps: int) -> None:
        """The meter's observations of the first `num_steps` steps."""
        end = num_steps == self.run.num_steps
        meter.observe_decodes(self.run.ids, self.time_s[:num_steps], self.step_ms[:num_steps],
                              self.kv_usage[:num_steps], self.run.finished if end else ())

    def apply(self, state: StreamState, a: int, b: int) -> None:
        """Fold steps a..b-1 into `state` as StreamState.apply folds their records, all but
        `last`, left None (a keyframe inside a run sets it from `record`)."""
        run, ids, at = self.run, self.run.ids, self.new_at
        state.touched.update(ids)
        for rid, start in zip(ids, run.start0.tolist(), strict=True):
            state.computed[rid] = start + b
            state.outputs[rid] = state.outputs.get(rid, 0) + b - a
        tables = state.tables
        for row, block in zip(run.kv.rows[at[a]:at[b]].tolist(), run.kv.blocks[at[a]:at[b]],
                              strict=True):
            tables.setdefault(ids[row], []).append(block)
        steps = self.event_steps
        for j in steps[bisect_left(steps, a):bisect_left(steps, b)]:
            for _, kind, blocks in self.events[j]:
                (state.cached.update if kind else state.cached.difference_update)(blocks)
        finished = run.finished if b == run.num_steps else ()
        for rid in finished:
            state.status[rid] = FINISHED
            tables.pop(rid, None)
        state.running = [rid for rid in ids if rid not in finished]
        state.waiting = []
        state.last, state.iter, state.step = None, self.n0 + b - 1, run.step0 + b - 1
        state.carried.update(num_usable_blocks=run.num_usable_blocks,
                             token_budget=run.token_budget, max_num_seqs=run.max_num_seqs,
                             kv_waste=self.waste_dict(b - 1))

    def record(self, j: int) -> dict[str, Any]:
        """Step j's record as the per-record path keeps it (a keyframe's `record`)."""
        rec = normalize(next(self.run.records(j)).to_dict())
        rec["iter"] = self.n0 + j
        return rec


def _delta_field(delta: list[int | None]) -> str:
    return ',"kd":[' + ",".join("null" if v is None else str(v) for v in delta) + "]"


def _first_fields(state: StreamState, run: DecodeStretch, refs: list[str]) -> tuple[str, str]:
    """What `pack` compares with the state before the run, for its first step: (the step
    clock and queues, the carried values but the waste)."""
    lead = f',"s":{run.step0}' if run.step0 != state.step + 1 else ""
    if state.running != list(run.ids):
        lead += f',"rn":[{",".join(refs)}]'
    if state.waiting:
        lead += ',"wt":[]'
    carried = "".join(f',"{key}":{value}' for key, name, value in (
        ("nu", "num_usable_blocks", run.num_usable_blocks), ("tb", "token_budget",
        run.token_budget), ("mx", "max_num_seqs", run.max_num_seqs))
        if value != state.carried[name])
    return lead, carried


def _flags(state: StreamState, run: DecodeStretch) -> tuple[str, str]:
    """The scheduled fields ("sn", "ss", "sm", "sk") of the first step and of every later one,
    where the state's prediction of a decode token misses (in an engine's run it never does)."""
    first: dict[str, list[int]] = {"sn": [], "ss": [], "sm": [], "sk": []}
    later: list[int] = []
    for pos, (rid, start) in enumerate(zip(run.ids, run.start0.tolist(), strict=True)):
        num_out = state.outputs.get(rid, 0)
        total = state.prompt_len.get(rid, 0) + num_out
        if state.computed.get(rid, 0) != start:
            first["ss"] += [pos, start]
        if total - start != 1:  # then also after each step: both grow by one
            first["sn"] += [pos, 1]
            first["sm"].append(pos)
            later.append(pos)
        if total - start != 1 or num_out < 1:
            first["sk"].append(pos)
    after = {"sn": [x for pos in later for x in (pos, 1)], "sm": later, "sk": later}
    return ("".join(f',"{key}":{dumps(v)}' for key, v in first.items() if v),
            "".join(f',"{key}":{dumps(v)}' for key, v in after.items() if v))
