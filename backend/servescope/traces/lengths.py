"""Drawn request lengths: fixed (an int), uniform on [lo, hi] (a tuple), or choices (a list)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

LengthSpec = int | tuple[int, int] | Sequence[int]


def lengths(rng: np.random.Generator, spec: LengthSpec, n: int) -> np.ndarray:
    if isinstance(spec, int):
        values = np.full(n, spec)
    elif isinstance(spec, tuple) and len(spec) == 2:
        values = rng.integers(spec[0], spec[1] + 1, n)
    elif len(spec) > 0:
        values = rng.choice(np.asarray(spec, dtype=np.int64), n)
    else:
        raise ValueError(f"bad length spec {spec!r}")
    if (values < 1).any():
        raise ValueError(f"lengths must be at least 1: {spec!r}")
    return values
