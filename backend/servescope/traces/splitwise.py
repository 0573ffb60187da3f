"""Splitwise and Vidur request traces (CSV). SplitwiseSim: `request_id`, `arrival_timestamp` (s),
`prompt_size`, `token_size` (its `batch_size`, `request_type`, `application_id` are not used).
Vidur: `arrived_at` (s), `num_prefill_tokens`, `num_decode_tokens`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from servescope.core.request import RequestSpec
from servescope.traces._io import CsvTable, open_text, parse_count, parse_seconds
from servescope.traces._specs import build_spec
from servescope.traces.report import TraceReport

SPLITWISE = ("arrival_timestamp", "prompt_size", "token_size")
VIDUR = ("arrived_at", "num_prefill_tokens", "num_decode_tokens")


def read(path: Path, report: TraceReport, id_prefix: str = "sw") -> Iterator[RequestSpec]:
    with open_text(path) as handle:
        table = CsvTable(handle)
        names = SPLITWISE if table.has(SPLITWISE[0]) else VIDUR
        report.meta["dialect"] = "splitwise" if names is SPLITWISE else "vidur"
        i_ts, i_in, i_out = (table.column(name) for name in names)
        first: float | None = None
        for index, (line, row) in enumerate(table.rows()):
            seconds = parse_seconds(row[i_ts], line, names[0])
            if first is None:
                first = seconds
            rid = f"{id_prefix}{index}"  # ids in files may repeat; row order may not
            spec = build_spec(report, rid, parse_count(row[i_in], line, names[1]),
                              parse_count(row[i_out], line, names[2]), arrival_s=seconds - first)
            if spec is not None:
                yield spec
