"""Replay of ServeScope's own step recordings (what `servescope sim --out` and the capture
scheduler write): a header line {"format": "servescope-steps", "version": 1, "source", "config",
"requests"} then one StepRecord.to_dict() per line. See docs/trace-format.md."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from servescope.core.records import ScheduledEntry, StepRecord
from servescope.traces._io import open_text, text_lines
from servescope.traces._records import Fields, make_record
from servescope.traces.errors import TraceFormatError, shown
from servescope.traces.report import TraceReport

FORMAT = "servescope-steps"
SUPPORTED_VERSIONS = (1,)


def read_header(line: str) -> dict[str, Any]:
    try:
        head = json.loads(line)
    except json.JSONDecodeError as err:
        raise TraceFormatError(1, "", f"header is not JSON: {err.msg}") from None
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        raise TraceFormatError(1, "format", f"expected a header with format {FORMAT!r}")
    if head.get("version") not in SUPPORTED_VERSIONS:
        raise TraceFormatError(1, "version", f"unsupported version {shown(head.get('version'))} "
                               f"(this ServeScope reads {SUPPORTED_VERSIONS})")
    for key, kind in (("config", dict), ("requests", list)):
        if not isinstance(head.get(key, kind()), kind):
            raise TraceFormatError(1, key, f"expected a JSON {kind.__name__}")
    return head


def read(path: Path, report: TraceReport) -> Iterator[StepRecord]:
    with open_text(path) as handle:
        lines = text_lines(handle)
        first = next(lines, None)
        if first is None:
            raise TraceFormatError(1, "", "empty file: no header")
        head = read_header(first[1])
        report.meta.update(version=head["version"], source=head.get("source"),
                           config=head.get("config", {}), requests=head.get("requests", []))
        for number, line in lines:
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise TraceFormatError(number, "", f"not JSON: {err.msg}") from None
            if not isinstance(row, dict):
                raise TraceFormatError(number, "", "expected a step record object")
            report.num_rows += 1
            report.num_yielded += 1
            yield record_from_dict(row, number)


def record_from_dict(row: dict[str, Any], line: int) -> StepRecord:
    """The inverse of StepRecord.to_dict (kv_usage is derived and ignored)."""
    f = Fields(row, line)
    usable = f.count("num_usable_blocks")
    if usable < 1:
        raise TraceFormatError(line, "num_usable_blocks", "must be at least 1")
    finished = f.ids("finished")
    return make_record(
        step=f.count("step"), iter=f.count("iter"), time_s=f.seconds("time_s"),
        step_time_ms=f.seconds("step_time_ms"), scheduled=_entries(f),
        num_free_blocks=f.count("num_free_blocks"), num_usable_blocks=usable,
        token_budget=f.count("token_budget"), max_num_seqs=f.count("max_num_seqs"),
        arrivals=f.ids("arrivals"), new=f.ids("new"), resumed=f.ids("resumed"),
        preempted=f.ids("preempted"), finished=finished,
        released=f.ids("released") if "released" in row else finished,
        rejected=tuple((str(r.get("id")), str(r.get("reason"))) for r in f.objects("rejected")),
        new_blocks={str(k): f.block_ids(v, "new_blocks")
                    for k, v in f.mapping("new_blocks").items()},
        freed_blocks=f.block_ids(f.get("freed_blocks", []), "freed_blocks"),
        block_events=tuple(f.event(e) for e in f.objects("kv_events")),
        num_cached_tokens={str(k): f.count_value(v, "num_cached_tokens")
                           for k, v in f.mapping("num_cached_tokens").items()},
        running=f.ids("running"), waiting=f.ids("waiting"),
        kv_waste={str(k): f.count_value(v, "kv_waste") for k, v in f.mapping("kv_waste").items()},
        **_speculation(f),
    )


def _speculation(f: Fields) -> dict[str, Any]:
    """drafts and accepted per scheduled entry, when the run speculated (issue #34)."""
    items = f.objects("scheduled")
    if not any("drafts" in item for item in items):
        return {}
    drafts: dict[str, int] = {}
    accepted: dict[str, int] = {}
    for item in items:
        g = Fields(item, f.line)
        drafts[str(item.get("id"))] = g.count("drafts")
        value = g.get("accepted", -1)
        if not isinstance(value, int) or isinstance(value, bool) or value < -1:
            raise TraceFormatError(f.line, "scheduled.accepted",
                                   f"expected an integer >= -1, got {shown(value)}")
        if value >= 0:
            accepted[str(item.get("id"))] = value
    return {"drafts": drafts, "accepted": accepted}


def _entries(f: Fields) -> list[ScheduledEntry]:
    entries = []
    for item in f.objects("scheduled"):
        g = Fields(item, f.line)
        rid = g.get("id")
        kind = g.get("kind", "decode")
        if not isinstance(rid, str):
            raise TraceFormatError(f.line, "scheduled.id", f"expected a string, got {shown(rid)}")
        if kind not in ("prefill", "decode"):
            raise TraceFormatError(f.line, "scheduled.kind", f"expected prefill or decode, "
                                   f"got {shown(kind)}")
        sampled = g.get("sampled", True)
        if not isinstance(sampled, bool):
            raise TraceFormatError(f.line, "scheduled.sampled", "expected true or false")
        entries.append(ScheduledEntry(rid, g.count("n"), g.count("start"), sampled,
                                      kind == "prefill"))
    return entries
