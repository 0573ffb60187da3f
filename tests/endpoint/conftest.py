"""The endpoint tests' server: one a module (tests/support/endpoint.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.endpoint import start
from support.server import Server


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = start(tmp_path_factory.mktemp("endpoint"))
    yield server
    server.stop()
