"""docs/metrics.md's two tables against the exporter: every `vllm:` family the exporter writes
is listed as exported with its type, every listed one is written, and none of the families
listed as not exported (each with its reason) is."""

from __future__ import annotations

import re
from fnmatch import fnmatch
from pathlib import Path

from servescope.observability.families import engine_samples, engine_view
from servescope.observability.meter import Meter
from servescope.observability.text import render

DOC = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"
EXPORTED_HEAD = "| metric | type | what it is here |"
LEFT_OUT_HEAD = "| not exported | type | why |"


class OneRequest:
    def output_len_of(self, rid: str) -> int | None:
        return None

    def prompt_len_of(self, rid: str) -> int:
        return 4

    def arrival_s_of(self, rid: str) -> float | None:
        return 0.0


def table(head: str) -> list[tuple[list[str], str, str]]:
    """(the vllm: names of the first cell, labels dropped; the type cell; the last cell)."""
    lines = DOC.read_text().splitlines()
    start = lines.index(head) + 2
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        names = [re.sub(r"\{.*\}$", "", n) for n in re.findall(r"`([^`]+)`", cells[0])]
        rows.append(([n for n in names if n.startswith("vllm:")], cells[1], cells[-1]))
    return rows


def exporter_types() -> dict[str, str]:
    """The families one finished request's run is written with, and their types (a run that
    speculates, so the spec-decode families are written too)."""
    meter = Meter(OneRequest(), enable_prefix_caching=True)
    meter.observe({"time_s": 0.0, "step_time_ms": 5.0, "arrivals": ["a"], "new": ["a"],
                   "scheduled": [{"id": "a", "sampled": True, "drafts": 2, "accepted": 1}],
                   "running": ["a"], "waiting": [], "finished": ["a"], "kv_usage": 0.0})
    spec = {"method": "ngram", "num_speculative_tokens": 2}
    view = engine_view(meter, "m", 0, "s", {"block_size": 16, "speculative_config": spec}, 16)
    text = render(engine_samples(view, 0))
    return dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.MULTILINE))


def test_every_family_written_is_listed_as_exported_with_its_type() -> None:
    written = {n: t for n, t in exporter_types().items() if n.startswith("vllm:")}
    listed = {name: kind.split(" ")[0] for names, kind, _ in table(EXPORTED_HEAD)
              for name in names}
    assert written == listed


def test_every_family_left_out_has_a_reason_and_is_not_written() -> None:
    written = exporter_types()
    rows = table(LEFT_OUT_HEAD)
    assert len(rows) >= 8
    for names, _, why in rows:
        assert len(why) > 20, names
        for pattern in names:
            assert not [n for n in written if fnmatch(n, pattern)], pattern

