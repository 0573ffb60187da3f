"""Keyframes: columnar snapshots of a StreamState (docs/protocol.md, "Keyframe"), taken every
so often by the track that simulates ahead and loaded to decode the records after them. Built
by numpy: a keyframe of a 200,000-request session over a pool of 28,000 blocks reads a million
per-request values and every block."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import repeat
from typing import Any

import numpy as np

from servescope.api.wire import protocol as P
from servescope.api.wire.compact import (
    expand_keyframe,
    flatten,
    labelled_runs,
    ranges,
    ranges_each,
    runs,
)
from servescope.api.wire.keys import CARRIED
from servescope.api.wire.stream_state import PENDING, StreamState
from servescope.core.request_table import request_table

FINAL = -1  # a count that is the request's final one (see final_marked)


# A track waits for 4 bytes of packed records a request and a quarter byte a block (and for the
# keyframe's own size) before the next keyframe: a keyframe costs about 0.15 us a request and
# 0.15 us a block, about what packing a tenth of a byte of records costs, so keyframes stay a
# small share of a track's CPU (bench/track_store.py measures it; its docstring has the figures).
def keyframe_cost(num_requests: int, num_gpu_blocks: int) -> int:
    return 4 * num_requests + num_gpu_blocks // 4


def keyframe(state: StreamState, engine: int, num_gpu_blocks: int) -> P.Keyframe:
    """The columnar keyframe message for the state after record `state.iter`, compacted (built
    unvalidated: a big pool's columns are long, and the tests validate what is sent)."""
    ref, last = state.ref, state.last
    tables = list(state.tables.values())
    flat = flatten(tables)
    owner, owners, ref_count = block_columns(state, num_gpu_blocks, flat)
    columns: dict[str, Any] = {name: runs(column) for name, column in final_marked(state).items()}
    return P.Keyframe.model_construct(
        engine=engine, iter=state.iter,
        step=last["step"] if last else 0, time_s=last["time_s"] if last else 0.0,
        **columns,
        block_owner=labelled_runs(owner, owners), block_ref_count=runs(ref_count),
        tables=list(zip(map(ref, state.tables), ranges_each(tables, flat), strict=True)),
        cached_blocks=ranges(np.sort(np.fromiter(state.cached, np.int64, len(state.cached)))),
        running=[ref(r) for r in state.running], waiting=[ref(r) for r in state.waiting],
        record=last)


def request_columns(state: StreamState) -> dict[str, np.ndarray]:
    """The per-request columns in the request list's order, brought up to date from the
    requests touched since the last keyframe (the first reads every request)."""
    sources = {"status": state.status, "num_computed_tokens": state.computed,
               "num_output_tokens": state.outputs, "num_cached_tokens": state.cached_tokens,
               "num_preemptions": state.preemptions}
    if state.columns is None or len(state.index) < len(state.ids):
        # every request, looked up in C (0 is PENDING); every time where an id is listed
        # twice (both places show its values, and the index knows only one)
        state.columns = {name: np.fromiter(map(values.get, state.ids, repeat(0)),
                                           np.int64, len(state.ids))
                         for name, values in sources.items()}
    else:
        touched = [rid for rid in state.touched if rid in state.index]
        at = np.fromiter(map(state.index.__getitem__, touched), np.int64, len(touched))
        for name, values in sources.items():
            state.columns[name][at] = [values.get(rid, 0) for rid in touched]
    state.touched = set()
    return {**state.columns,
            "num_cached_tokens": np.maximum(state.columns["num_cached_tokens"], 0)}


def final_marked(state: StreamState) -> dict[str, np.ndarray]:
    """request_columns with each count that is the final one the request list gives
    (output_len output tokens, prompt_len + output_len - 1 computed: a finished request's) as
    FINAL: most of a long trace is finished, and a run of marks is a few bytes where its
    counts were a number each (docs/protocol.md, "Keyframe")."""
    columns = request_columns(state)
    if state.final_counts is None:
        table = state.table
        prompt, output = (_lengths(c, len(table)) for c in (table.prompt_len, table.output_len))
        known = (prompt >= 1) & (output >= 1)  # then no pending request (0, 0) is marked
        state.final_counts = (np.where(known, prompt + output - 1, -2), np.where(known, output, -2))
    for name, final in zip(("num_computed_tokens", "num_output_tokens"), state.final_counts,
                           strict=True):
        columns[name] = np.where(columns[name] == final, FINAL, columns[name])
    return columns


def _lengths(column: Any, n: int) -> np.ndarray:
    """A request table's length column as int64, -2 (which no count equals) where unknown."""
    if column is None:
        return np.full(n, -2, np.int64)
    return np.fromiter((-2 if v is None else v for v in column), np.int64, n)


def resolve_final(kf: dict[str, Any], requests: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """An expanded keyframe with its FINAL marks back as the counts they stand for (a mark is
    made only where the request list gives both lengths)."""
    table, out = request_table(requests), dict(kf)

    def final(k: int, computed: bool) -> int:
        prompt, output = table.prompt_len, table.output_len
        assert prompt is not None and output is not None
        return int(prompt[k]) + int(output[k]) - 1 if computed else int(output[k])

    for name, computed in (("num_computed_tokens", True), ("num_output_tokens", False)):
        out[name] = [final(k, computed) if v == FINAL else v for k, v in enumerate(kf[name])]
    return out


def block_columns(state: StreamState, num_gpu_blocks: int, flat: tuple[np.ndarray, np.ndarray]
                  ) -> tuple[np.ndarray, list[Any], np.ndarray]:
    """Each block's owner, the first table holding it (in table order), as a position in the
    list of table owners (-1: none); that list; each block's reference count (how many tables
    hold it). Blocks outside the pool are left out. `flat`: the tables flattened."""
    lengths, held = flat
    holder = np.repeat(np.arange(len(lengths)), lengths)
    inside = (held >= 0) & (held < num_gpu_blocks)
    held, holder = held[inside], holder[inside]
    blocks, first = np.unique(held, return_index=True)
    owner = np.full(num_gpu_blocks, -1, np.int64)
    owner[blocks] = holder[first]
    return (owner, [state.ref(rid) for rid in state.tables],
            np.bincount(held, minlength=num_gpu_blocks))


def load_keyframe(requests: Sequence[Mapping[str, Any]], kf: dict[str, Any]) -> StreamState:
    """A StreamState equal to the one the keyframe was taken from (for decoding after it)."""
    kf = resolve_final(expand_keyframe(kf), requests)
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
