"""BurstGPT v1 and v3 CSV, columns by name (`Timestamp` s, `Request tokens`, `Response tokens`;
v3 adds `Session ID`, `Elapsed time`; it becomes the request's `session_id`). `Response tokens` 0
marks a failed request: skipped and counted as "failed"."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from servescope.core.request import RequestSpec
from servescope.traces._io import CsvTable, open_text, parse_count, parse_seconds
from servescope.traces._specs import build_spec
from servescope.traces.report import TraceReport


def read(path: Path, report: TraceReport, id_prefix: str = "bg") -> Iterator[RequestSpec]:
    with open_text(path) as handle:
        table = CsvTable(handle)
        i_ts = table.column("Timestamp")
        i_in = table.column("Request tokens")
        i_out = table.column("Response tokens")
        i_session = table.column("Session ID") if table.has("Session ID") else None
        report.meta["version"] = 1 if i_session is None else 3
        first: float | None = None
        for index, (line, row) in enumerate(table.rows()):
            seconds = parse_seconds(row[i_ts], line, "Timestamp")
            prompt_len = parse_count(row[i_in], line, "Request tokens")
            output_len = parse_count(row[i_out], line, "Response tokens")
            if first is None:
                first = seconds
            if output_len == 0:
                report.num_rows += 1
                report.skip("failed")
                continue
            spec = build_spec(report, f"{id_prefix}{index}", prompt_len, output_len,
                              arrival_s=seconds - first,
                              session_id=None if i_session is None else row[i_session].strip()
                              or None)
            if spec is not None:
                yield spec
        if report.skipped["failed"]:
            report.note(f"{report.skipped['failed']} failed requests (Response tokens 0) skipped")
