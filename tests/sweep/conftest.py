"""Sweep test factories: a small Azure-format trace written by the test (no public trace is
committed), a base config and a grid over it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def write_azure_trace(path: Path, num_requests: int = 24, gap_ms: int = 40) -> Path:
    """Arrivals `gap_ms` apart, prompts of 300-1,400 tokens, outputs of 8-40."""
    rows = ["TIMESTAMP,ContextTokens,GeneratedTokens"]
    for i in range(num_requests):
        ms = i * gap_ms
        rows.append(f"2023-11-16 18:17:{ms // 1000:02d}.{ms % 1000:03d}0000,"
                    f"{300 + (i * 373) % 1100},{8 + (i * 7) % 33}")
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.fixture
def make_trace() -> Callable[..., Path]:
    return write_azure_trace


@pytest.fixture
def trace_file(tmp_path: Path) -> Path:
    return write_azure_trace(tmp_path / "azure_small.csv")


@pytest.fixture
def base() -> dict[str, Any]:
    """The base config's settings, as a sweep takes them (each point resolves them)."""
    return {"model": MODEL, "gpu": "H100"}
