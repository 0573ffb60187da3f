"""The explorer watching `servescope serve --openai` in real Chromium: the page opens the link the
server prints, says it is live, and a request the test sends appears in the queues under its
engine id (vLLM's "cmpl-<request_id>-0") while it runs, the play head following the live edge."""

from __future__ import annotations

import json
import threading

import httpx
import pytest
from pagestate import wait_ready
from support.endpoint import CONFIG
from support.server import Server

ENGINE_ID = "cmpl-e2e-live-0"
# a request that runs a while at wall-clock pace: 600 decode steps of 10 ms or more
MAX_TOKENS = 600


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("live-view")
    config = tmp / "config.json"
    config.write_text(json.dumps(CONFIG))
    server = Server(tmp / "data", "--openai", "--config", str(config))
    yield server
    server.stop()


def send(server: Server, errors: list[str]) -> None:
    """One completion, as a client sends it (it ends when the server does)."""
    try:
        httpx.post(server.url + "/v1/completions", timeout=60, json={
            "prompt": list(range(1, 41)), "max_tokens": MAX_TOKENS, "ignore_eos": True,
            "request_id": "e2e-live"})
    except httpx.HTTPError as err:  # the server stopping while it streams is no failure here
        errors.append(str(err))


def test_a_request_sent_appears_live_under_its_id(endpoint, page):
    page.goto(endpoint.printed("explorer at "))
    wait_ready(page)
    assert page.text_content("#source-label") == "live"
    assert page.evaluate("() => window.__servescope.store.role") == "driver"

    errors: list[str] = []
    client = threading.Thread(target=send, args=(endpoint, errors), daemon=True)
    client.start()
    chip = f'.chips .chip[data-request="{ENGINE_ID}"]'
    page.wait_for_selector(chip, timeout=30_000)
    assert page.get_attribute(chip, "title") == ENGINE_ID
    page.wait_for_selector(f'#lane-running .chip[data-request="{ENGINE_ID}"]', timeout=30_000)
    assert page.evaluate("() => window.__servescope.store.panes[0].playing") is True
    assert page.errors == []
    assert "Traceback" not in endpoint.stderr()
