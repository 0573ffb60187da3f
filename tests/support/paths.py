"""Where ../shared lives; tests import it as `from support.paths import shared_path`."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"


def shared_path(*parts: str) -> Path:
    """A path under ../shared, skipping the test with a reason when it is not there."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} not present (../shared is only on developer and CI machines)")
    return path
