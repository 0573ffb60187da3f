"""Keyframes of big pools made small on the wire: a column with long runs of one value goes as
`{"runs": [value, count, ...]}`, a list of ids with long consecutive stretches as
`{"ranges": [first, count, ...]}`, each only where that is shorter (docs/protocol.md)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain, groupby
from typing import Any

import numpy as np

RUN_COLUMNS = ("status", "num_computed_tokens", "num_output_tokens", "num_cached_tokens",
               "num_preemptions", "block_owner", "block_ref_count")
NUMPY_LEN = 256  # ranges() of a list this long or longer is faster by numpy


def runs(values: Sequence[Any] | np.ndarray) -> list[Any] | dict[str, list[Any]]:
    """Grouped in C (a keyframe of a million-request session has columns of a million values):
    an integer array by numpy. A run is equal values of one type: 1, True and 1.0 are equal in
    Python, not on the wire, so a column mixing number types groups by (type, value), a slower
    path no keyframe takes."""
    if isinstance(values, np.ndarray):
        return _stretches(values, 0, "runs")
    numbers = {int, float, bool} & set(map(type, values))
    grouped = groupby(values) if len(numbers) <= 1 else \
        ((v, g) for (_, v), g in groupby(zip(map(type, values), values, strict=True)))
    out: list[Any] = []
    for v, group in grouped:
        out += [v, len(list(group))]
        if len(out) >= len(values):
            return list(values)
    return {"runs": out} if out else []


def _stretches(column: np.ndarray, step: int, key: str) -> list[int] | dict[str, list[int]]:
    """An integer array as [first, count, ...] under `key`, each stretch a value repeated (step
    0: repeats, the wire's `runs`) or counting up by one (step 1: ranges), or as the plain list
    where that is not shorter. In numpy: a keyframe of a 200,000-request run has columns of
    that length."""
    if len(column) == 0:
        return []
    starts = np.concatenate(([0], np.flatnonzero(np.diff(column) != step) + 1))
    if 2 * len(starts) >= len(column):
        return column.tolist()  # type: ignore[no-any-return]
    out = np.empty(2 * len(starts), np.int64)
    out[0::2], out[1::2] = column[starts], np.diff(np.append(starts, len(column)))
    return {key: out.tolist()}


def labelled_runs(column: np.ndarray, labels: Sequence[Any]) -> list[Any] | dict[str, list[Any]]:
    """runs() of a column of positions in `labels` (-1: None), each given as its label (equal
    labels sit at one position: a keyframe's block owners)."""
    def label(k: int) -> Any:
        return None if k < 0 else labels[k]
    packed = _stretches(column, 0, "runs")
    if isinstance(packed, list):
        return list(map(label, packed))
    values = packed["runs"]
    values[0::2] = map(label, values[0::2])
    return packed


def ranges(ids: Sequence[int] | np.ndarray) -> list[int] | dict[str, list[int]]:
    if len(ids) >= NUMPY_LEN:
        return _stretches(np.asarray(ids, np.int64), 1, "ranges")
    if isinstance(ids, np.ndarray):
        ids = ids.tolist()
    out: list[int] = []
    for b in ids:
        if out and out[-2] + out[-1] == b:
            out[-1] += 1
        else:
            out += [b, 1]
        if len(out) >= len(ids):
            return list(ids)
    return {"ranges": out} if out else []


def flatten(lists: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Each list's length, and every list's ids one after another."""
    lengths = np.fromiter(map(len, lists), np.int64, len(lists))
    return lengths, np.fromiter(chain.from_iterable(lists), np.int64, int(lengths.sum()))


def ranges_each(lists: Sequence[Sequence[int]], flat: tuple[np.ndarray, np.ndarray] | None = None
                ) -> list[list[int] | dict[str, list[int]]]:
    """ranges() of each list, by numpy over all of them at once (a keyframe's block tables:
    hundreds of tables of a hundred blocks); `flat`: flatten(lists), when the caller has it."""
    lengths, ids = flat or flatten(lists)
    ends = np.cumsum(lengths)
    starts = np.ones(len(ids), bool)  # where a stretch starts: a list's first id or a gap
    starts[1:] = np.diff(ids) != 1
    starts[ends[lengths > 0] - lengths[lengths > 0]] = True
    at = np.flatnonzero(starts)
    bounds = np.searchsorted(at, np.concatenate(([0], ends))).tolist()
    at_ = at.tolist()
    out: list[list[int] | dict[str, list[int]]] = []
    for k, ids_k in enumerate(lists):
        first = at_[bounds[k]:bounds[k + 1]]
        if 2 * len(first) >= len(ids_k):
            out.append(list(ids_k))
            continue
        counts = np.diff(np.append(first, ends[k])).tolist()
        out.append({"ranges": [x for pair in zip(ids[first].tolist(), counts, strict=True)
                               for x in pair]})
    return out


def expand(column: Any) -> list[Any]:
    if isinstance(column, list):
        return column
    if "runs" in column:
        r = column["runs"]
        return [v for k in range(0, len(r), 2) for v in [r[k]] * r[k + 1]]
    r = column["ranges"]
    return [b for k in range(0, len(r), 2) for b in range(r[k], r[k] + r[k + 1])]


def expand_keyframe(kf: dict[str, Any]) -> dict[str, Any]:
    out = {**kf, **{name: expand(kf[name]) for name in RUN_COLUMNS}}
    out["tables"] = [[r, expand(blocks)] for r, blocks in kf["tables"]]
    out["cached_blocks"] = expand(kf["cached_blocks"])
    return out
