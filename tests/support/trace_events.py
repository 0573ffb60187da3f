"""A validator for the Trace Event Format (Chrome tracing / Perfetto JSON), from its documented
rules: the object form {"traceEvents": [...]} or a bare array; every event has `ph`; duration
events carry name, pid, tid, ts and dur >= 0; metadata events name a process or thread; counter
events carry numeric args; instant events a scope of g, p or t; complete slices on one thread
must nest (Perfetto drops slices that partly overlap)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

PHASES = set("BEXiIbneCMsftPOND(),R") | {"I"}
METADATA = {"process_name", "thread_name", "process_sort_index", "thread_sort_index",
            "process_labels"}


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def validate(trace: Any) -> list[str]:
    """Problems found (empty when the trace is valid)."""
    if isinstance(trace, dict):
        events = trace.get("traceEvents")
        if not isinstance(events, list):
            return ["object form needs a traceEvents list"]
        unit = trace.get("displayTimeUnit", "ms")
        if unit not in ("ms", "ns"):
            return [f"displayTimeUnit must be ms or ns, got {unit!r}"]
    elif isinstance(trace, list):
        events = trace
    else:
        return ["a trace is a JSON object or array"]
    problems: list[str] = []
    slices: dict[tuple[Any, Any], list[tuple[float, float]]] = defaultdict(list)
    for index, event in enumerate(events):
        problems.extend(f"event {index}: {p}" for p in _check(event))
        if isinstance(event, dict) and event.get("ph") == "X" and not _check(event):
            slices[(event["pid"], event["tid"])].append((event["ts"], event["ts"] + event["dur"]))
    for track, spans in slices.items():
        problems.extend(f"track {track}: {p}" for p in _nesting(spans))
    return problems


def _check(event: Any) -> list[str]:
    if not isinstance(event, dict) or event.get("ph") not in PHASES:
        return ["missing or unknown ph"]
    ph = event["ph"]
    out = []
    if ph == "M":
        if event.get("name") not in METADATA or not isinstance(event.get("args"), dict):
            out.append("metadata needs a known name and args")
        return out
    if not isinstance(event.get("name"), str):
        out.append("name must be a string")
    if not _number(event.get("ts")):
        out.append("ts must be a number (microseconds)")
    if "pid" not in event:
        out.append("pid missing")
    if ph == "X":
        if "tid" not in event:
            out.append("tid missing")
        if not _number(event.get("dur")) or event["dur"] < 0:
            out.append("complete events need dur >= 0")
    if ph == "C":
        args = event.get("args")
        if not isinstance(args, dict) or not args or not all(_number(v) for v in args.values()):
            out.append("counter args must be numbers")
    if ph in ("i", "I") and event.get("s", "t") not in ("g", "p", "t"):
        out.append("instant scope must be g, p or t")
    return out


def _nesting(spans: list[tuple[float, float]]) -> list[str]:
    stack: list[tuple[float, float]] = []
    out = []
    for start, end in sorted(spans, key=lambda s: (s[0], -s[1])):
        while stack and stack[-1][1] <= start + 1e-6:
            stack.pop()
        if stack and end > stack[-1][1] + 1e-6:
            out.append(f"slice [{start}, {end}] partly overlaps [{stack[-1][0]}, {stack[-1][1]}]")
        stack.append((start, end))
    return out
