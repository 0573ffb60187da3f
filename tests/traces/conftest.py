"""Helpers for trace tests: write a small file, read a format through the registry."""

from __future__ import annotations

from pathlib import Path

import pytest

from servescope.traces import registry
from servescope.traces.report import TraceReport


@pytest.fixture
def write(tmp_path: Path):
    def _write(name: str, content: str | bytes) -> Path:
        path = tmp_path / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        return path
    return _write


def load(path: Path, fmt: str, **params) -> tuple[list, TraceReport]:
    report = TraceReport(fmt, "")
    return list(registry.load(path, report, **params)), report
