"""Keyframes of big pools made small on the wire: a column with long runs of one value goes as
`{"runs": [value, count, ...]}`, a list of ids with long consecutive stretches as
`{"ranges": [first, count, ...]}`, each only where that is shorter (docs/protocol.md)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby
from typing import Any

import numpy as np

RUN_COLUMNS = ("status", "num_computed_tokens", "num_output_tokens", "num_cached_tokens",
               "num_preemptions", "block_owner", "block_ref_count")
NUMPY_LEN = 256  # ranges() of a list this long or longer is faster by numpy


def runs(values: Sequence[Any]) -> list[Any] | dict[str, list[Any]]:
    """Grouped in C (a keyframe of a million-request session has columns of a million values).
    A run is equal values of one type: 1, True and 1.0 are equal in Python, not on the wire, so
    a column mixing number types groups by (type, value), a slower path no keyframe takes."""
    numbers = {int, float, bool} & set(map(type, values))
    grouped = groupby(values) if len(numbers) <= 1 else \
        ((v, g) for (_, v), g in groupby(zip(map(type, values), values, strict=True)))
    out: list[Any] = []
    for v, group in grouped:
        out += [v, len(list(group))]
        if len(out) >= len(values):
            return list(values)
    return {"runs": out} if out else []


def ranges(ids: Sequence[int]) -> list[int] | dict[str, list[int]]:
    if len(ids) >= NUMPY_LEN:
        return _long_ranges(ids)
    out: list[int] = []
    for b in ids:
        if out and out[-2] + out[-1] == b:
            out[-1] += 1
        else:
            out += [b, 1]
        if len(out) >= len(ids):
            return list(ids)
    return {"ranges": out} if out else []


def _long_ranges(ids: Sequence[int]) -> list[int] | dict[str, list[int]]:
    """ranges() by numpy (a keyframe's cached blocks: up to the whole pool)."""
    column = np.asarray(ids, np.int64)
    starts = np.concatenate(([0], np.flatnonzero(np.diff(column) != 1) + 1))
    if 2 * len(starts) >= len(ids):
        return list(ids)
    out = np.empty(2 * len(starts), np.int64)
    out[0::2], out[1::2] = column[starts], np.diff(np.append(starts, len(ids)))
    return {"ranges": out.tolist()}


def expand(column: Any) -> list[Any]:
    if isinstance(column, list):
        return column
    if "runs" in column:
        r = column["runs"]
        return [v for k in range(0, len(r), 2) for v in [r[k]] * r[k + 1]]
    r = column["ranges"]
    return [b for k in range(0, len(r), 2) for b in range(r[k], r[k] + r[k + 1])]


def compact_keyframe(kf: dict[str, Any]) -> dict[str, Any]:
    out = {**kf, **{name: runs(kf[name]) for name in RUN_COLUMNS}}
    out["tables"] = [(r, ranges(blocks)) for r, blocks in kf["tables"]]
    out["cached_blocks"] = ranges(kf["cached_blocks"])
    return out


def expand_keyframe(kf: dict[str, Any]) -> dict[str, Any]:
    out = {**kf, **{name: expand(kf[name]) for name in RUN_COLUMNS}}
    out["tables"] = [[r, expand(blocks)] for r, blocks in kf["tables"]]
    out["cached_blocks"] = expand(kf["cached_blocks"])
    return out
