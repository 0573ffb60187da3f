"""Load options shared by every request-trace format: time window, arrival and length scaling,
the first N or a uniform random sample of N."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from servescope.core.request import RequestSpec


@dataclass(frozen=True)
class TraceOptions:
    """`window_s` is (start, end) in seconds after the trace's first arrival (end None = open);
    arrivals are rebased so the window starts at 0. Reading stops at the first arrival past the
    end, so files are assumed time-ordered (every catalogued trace is).
    `arrival_scale` multiplies arrival times (2.0 halves the rate); `length_scale` multiplies
    prompt, output and prefix lengths (rounded, at least 1). `limit` keeps the first N requests,
    `sample_n` a uniform random N (reservoir, bounded memory) in file order, seeded by `seed`.
    Order: window, then limit or sample, then scaling."""

    window_s: tuple[float, float | None] | None = None
    arrival_scale: float = 1.0
    length_scale: float = 1.0
    limit: int | None = None
    sample_n: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if self.arrival_scale <= 0 or self.length_scale <= 0:
            raise ValueError("arrival_scale and length_scale must be positive")
        for name in ("limit", "sample_n"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.window_s is not None:
            start, end = self.window_s
            if start < 0 or (end is not None and end < start):
                raise ValueError("window_s must be (start >= 0, end >= start or None)")


def apply_options(specs: Iterable[RequestSpec], options: TraceOptions) -> Iterator[RequestSpec]:
    stream: Iterator[RequestSpec] = iter(specs)
    if options.window_s is not None:
        stream = _window(stream, *options.window_s)
    if options.sample_n is not None:
        stream = iter(reservoir(stream, options.sample_n, np.random.default_rng(options.seed)))
    if options.limit is not None:
        stream = _first(stream, options.limit)
    if options.arrival_scale != 1.0 or options.length_scale != 1.0:
        stream = (_scaled(s, options.arrival_scale, options.length_scale) for s in stream)
    return stream


def _window(specs: Iterator[RequestSpec], start: float, end: float | None) -> Iterator[RequestSpec]:
    for spec in specs:
        if spec.arrival_s is None:
            yield spec
            continue
        if end is not None and spec.arrival_s > end:
            return
        if spec.arrival_s >= start:
            yield dataclasses.replace(spec, arrival_s=spec.arrival_s - start)


def _first(specs: Iterator[RequestSpec], n: int) -> Iterator[RequestSpec]:
    for index, spec in enumerate(specs):
        if index >= n:
            return
        yield spec


def reservoir(items: Iterable[RequestSpec], n: int,
              rng: np.random.Generator) -> list[RequestSpec]:
    """A uniform sample of n items in their original order (Li's Algorithm L: O(n) memory and
    O(n log(N/n)) random draws, so a many-million-row file costs little more than reading it)."""
    kept: list[tuple[int, RequestSpec]] = []
    iterator = enumerate(items)
    for index, item in iterator:
        kept.append((index, item))
        if len(kept) == n:
            break
    weight = math.exp(math.log(rng.random() or 1e-300) / n)
    next_index = n - 1 + _skip(rng, weight)
    for index, item in iterator:
        if index == next_index:
            kept[int(rng.integers(n))] = (index, item)
            weight *= math.exp(math.log(rng.random() or 1e-300) / n)
            next_index += _skip(rng, weight)
    kept.sort(key=lambda pair: pair[0])
    return [item for _, item in kept]


def _skip(rng: np.random.Generator, weight: float) -> int:
    if weight >= 1.0:
        return 1
    return int(math.floor(math.log(rng.random() or 1e-300) / math.log(1.0 - weight))) + 1


def _scaled(spec: RequestSpec, arrival_scale: float, length_scale: float) -> RequestSpec:
    def length(value: int) -> int:
        return max(1, round(value * length_scale))

    return dataclasses.replace(
        spec,
        arrival_s=None if spec.arrival_s is None else spec.arrival_s * arrival_scale,
        arrival_step=(None if spec.arrival_step is None
                      else round(spec.arrival_step * arrival_scale)),
        prompt_len=length(spec.prompt_len), output_len=length(spec.output_len),
        prefix=tuple((key, length(n)) for key, n in spec.prefix),
    )
