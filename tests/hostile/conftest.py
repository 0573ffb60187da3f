"""The hostile tests' app: the API's own fixtures (tests/api/conftest.py), shared here."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from support.server import ORIGIN, make_settings

from servescope.api.app import create_app

# a model outside the catalog, described by its config.json values (core/model_spec.py)
HF = {"hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
      "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1000}
FEW = {"synthetic": {"num_requests": 4, "request_rate": 5}}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    app = create_app(make_settings(tmp_path))
    with TestClient(app, headers=ORIGIN, raise_server_exceptions=False) as c:
        yield c
