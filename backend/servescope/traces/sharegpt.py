"""ShareGPT length statistics (CSV with `num_prefill_tokens`, `num_decode_tokens`, as Sarathi-Serve
and Vidur ship them): (prompt, output) pairs sampled with replacement by an injected Generator,
arriving as a Poisson process at `rate_per_s` (or all at 0 when no rate is given)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from servescope.core.request import RequestSpec
from servescope.traces._io import CsvTable, open_text, parse_count
from servescope.traces._specs import build_spec
from servescope.traces.errors import TraceFormatError
from servescope.traces.report import TraceReport

COLUMNS = ("num_prefill_tokens", "num_decode_tokens")


def read_pairs(path: Path) -> np.ndarray:
    """All (prompt, output) pairs with both > 0, as an int32 array: 8 bytes a row."""
    chunks: list[np.ndarray] = []
    buffer: list[tuple[int, int]] = []
    with open_text(path) as handle:
        table = CsvTable(handle)
        i_in, i_out = (table.column(name) for name in COLUMNS)
        for line, row in table.rows():
            pair = (parse_count(row[i_in], line, COLUMNS[0]),
                    parse_count(row[i_out], line, COLUMNS[1]))
            if pair[0] > 0 and pair[1] > 0:
                buffer.append(pair)
            if len(buffer) == 65536:
                chunks.append(np.asarray(buffer, dtype=np.int32))
                buffer.clear()
    chunks.append(np.asarray(buffer, dtype=np.int32).reshape(-1, 2))
    pairs = np.concatenate(chunks)
    if not len(pairs):
        raise TraceFormatError(0, COLUMNS[0], "no rows with positive prompt and output lengths")
    return pairs


def read(path: Path, report: TraceReport, num_requests: int = 1000,
         rate_per_s: float | None = None, rng: np.random.Generator | None = None,
         seed: int = 0, id_prefix: str = "sg") -> Iterator[RequestSpec]:
    rng = rng if rng is not None else np.random.default_rng(seed)
    pairs = read_pairs(path)
    report.meta["num_pairs"] = int(len(pairs))
    report.note(f"lengths sampled from {len(pairs)} ShareGPT conversations; arrivals synthetic")
    picks = pairs[rng.integers(0, len(pairs), num_requests)]
    if rate_per_s:
        gaps = rng.exponential(1.0 / rate_per_s, num_requests)
        arrivals = np.cumsum(gaps) - gaps[0]
    else:
        arrivals = np.zeros(num_requests)
    for i in range(num_requests):
        spec = build_spec(report, f"{id_prefix}{i}", int(picks[i, 0]), int(picks[i, 1]),
                          arrival_s=float(arrivals[i]))
        if spec is not None:
            yield spec
