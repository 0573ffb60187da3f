"""`vllm bench serve --save-result --save-detailed` JSON, or the JSONL `--append-result` writes
(one run a line; `run` picks one, default the last). Arrivals are `start_times` minus their
minimum; each request keeps what was measured (ttft_s, itl_s, e2el_s) in RequestSpec.measured,
and the run's own summary goes to report.meta["measured_summary"]. Every list is optional."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from servescope.core.request import RequestSpec
from servescope.traces._io import open_text, parse_count, parse_seconds, text_lines
from servescope.traces._specs import build_spec
from servescope.traces.errors import TraceFormatError
from servescope.traces.report import TraceReport

MEASURED = (("ttfts", "ttft_s"), ("itls", "itl_s"), ("latencies", "e2el_s"),
            ("queue_times", "client_queue_s"))  # vLLM: the wait for a --max-concurrency slot
LISTS = ("input_lens", "output_lens", "start_times", "errors", *(k for k, _ in MEASURED))


def load_run(path: Path, run: int = -1) -> tuple[int, dict[str, Any]]:
    """(line, run object): JSONL keeps only the chosen run in memory; an indented JSON file is
    read whole."""
    runs: list[tuple[int, dict[str, Any]]] = []
    with open_text(path) as handle:
        for number, line in text_lines(handle):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                if runs:
                    raise TraceFormatError(number, "", "not a JSON object") from None
                return 1, _whole(path)
            if not isinstance(value, dict):
                raise TraceFormatError(number, "", "expected a JSON object per run")
            runs.append((number, value))
            if run < 0 and len(runs) > -run:
                runs.pop(0)  # keep only the last -run runs
    if not runs or (run >= 0 and run >= len(runs)):
        raise TraceFormatError(0, "", f"no run {run} in the file ({len(runs)} runs)")
    return runs[run] if run >= 0 else runs[0]


def _whole(path: Path) -> dict[str, Any]:
    with open_text(path) as handle:
        try:
            value = json.load(handle)
        except json.JSONDecodeError as err:
            raise TraceFormatError(err.lineno, "", f"not JSON: {err.msg}") from None
        except UnicodeDecodeError:  # past the first line, which text_lines read as text
            raise TraceFormatError(0, "", "not UTF-8 text") from None
    if not isinstance(value, dict):
        raise TraceFormatError(1, "", "expected a JSON object")
    return value


def summary(result: dict[str, Any]) -> dict[str, Any]:
    """The run's scalar results; the "request_goodput:" key one version wrote is normalized."""
    return {key.rstrip(":"): value for key, value in result.items()
            if key not in LISTS and not isinstance(value, list | dict)}


def read(path: Path, report: TraceReport, run: int = -1,
         id_prefix: str = "b") -> Iterator[RequestSpec]:
    line, result = load_run(path, run)
    report.meta["measured_summary"] = summary(result)
    lists = {key: _list(result, key, line) for key in LISTS}
    for key in ("input_lens", "output_lens"):
        if lists[key] is None:
            raise TraceFormatError(line, key, "missing (save the run with --save-detailed)")
    n = len(lists["input_lens"])  # type: ignore[arg-type]
    for key, values in lists.items():
        if values is not None and len(values) != n:
            raise TraceFormatError(line, key, f"has {len(values)} entries, input_lens has {n}")
    starts = lists["start_times"]
    if starts is None:
        report.note("no start_times in the file: every request arrives at 0")
    first = min((parse_seconds(t, line, "start_times") for t in starts), default=0.0) \
        if starts else 0.0
    for i in range(n):
        spec = _spec(report, lists, i, line, first, f"{id_prefix}{i}")
        if spec is not None:
            yield spec


def _list(result: dict[str, Any], key: str, line: int) -> list[Any] | None:
    value = result.get(key)
    if value is not None and not isinstance(value, list):
        raise TraceFormatError(line, key, "expected a list")
    return value


def _spec(report: TraceReport, lists: dict[str, list[Any] | None], i: int, line: int,
          first: float, rid: str) -> RequestSpec | None:
    errors = lists["errors"]
    if errors is not None and errors[i]:
        report.num_rows += 1
        report.skip("failed")
        return None
    measured: dict[str, object] = {}
    for key, name in MEASURED:
        values = lists[key]
        if values is not None:
            measured[name] = _measure(values[i], line, f"{key}[{i}]")
    starts = lists["start_times"]
    arrival = parse_seconds(starts[i], line, f"start_times[{i}]") - first if starts else 0.0
    return build_spec(report, rid, parse_count(lists["input_lens"][i], line,  # type: ignore[index]
                                               f"input_lens[{i}]"),
                      parse_count(lists["output_lens"][i], line,  # type: ignore[index]
                                  f"output_lens[{i}]"),
                      arrival_s=arrival, measured=measured or None)


def _measure(value: Any, line: int, field: str) -> float | list[float]:
    if isinstance(value, list):
        return [parse_seconds(v, line, field) for v in value]
    return parse_seconds(value, line, field)
