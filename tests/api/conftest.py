"""Server test fixtures: an app on a temporary data directory with a hand-driven clock, a
TestClient and a real uvicorn process (helpers in tests/support/server.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from support.server import ORIGIN, UPLOADS, FakeClock, Server, make_settings

from servescope.api.app import create_app
from servescope.api.settings import Settings


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path)


@pytest.fixture
def client(settings: Settings, clock: FakeClock) -> Iterator[TestClient]:
    with TestClient(create_app(settings, clock=clock), headers={**ORIGIN, **UPLOADS}) as c:
        yield c


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    s = Server(tmp_path / "data")
    yield s
    s.stop()
