"""The hostile tests' app: a TestClient that answers a crash with its 500 (not a raise)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from support.server import ORIGIN, make_settings

from servescope.api.app import create_app


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    app = create_app(make_settings(tmp_path))
    with TestClient(app, headers=ORIGIN, raise_server_exceptions=False) as c:
        yield c
