"""Reading a trace format through the registry, for the adapter tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from servescope.traces import registry
from servescope.traces.report import TraceReport


def load(path: Path, fmt: str, **params: Any) -> tuple[list[Any], TraceReport]:
    report = TraceReport(fmt, "")
    return list(registry.load(path, report, **params)), report
