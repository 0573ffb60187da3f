"""The hostile suite (issue 33): attacks on the app, or on a real `servescope serve` process that
each test starts on 127.0.0.1, bounded in count and time. Every test here is marked `hostile`;
those also marked `slow` run only with SERVESCOPE_HOSTILE_ALL=1 (`make test-hostile`), the rest
with the ordinary test command."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from support.hostile_shares import HOSTILE_ALL
from support.server import ORIGIN, Server, make_settings

from servescope.api.app import create_app

HERE = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if HERE not in Path(str(item.fspath)).parents:
            continue
        item.add_marker(pytest.mark.hostile)
        if item.get_closest_marker("slow") and not HOSTILE_ALL:
            item.add_marker(pytest.mark.skip(reason="slow: make test-hostile runs it"))


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    """The app in process, answering a crash with its 500 (not a raise)."""
    app = create_app(make_settings(tmp_path))
    with TestClient(app, headers=ORIGIN, raise_server_exceptions=False) as c:
        yield c


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., Server]]:
    """`serve(SETTING=value, ...)`: a server with those settings (SERVESCOPE_<SETTING>)."""
    started: list[Server] = []

    def start(**settings: object) -> Server:
        env = {f"SERVESCOPE_{k.upper()}": str(v) for k, v in settings.items()}
        server = Server(tmp_path / f"data{len(started)}", **env)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
