"""Issue 8 in a real Chromium: diagnose a kv-starvation run at its end, export a chart as PNG."""

from __future__ import annotations

import json
import urllib.request

import pytest
from pagestate import wait_ready

pytestmark = pytest.mark.e2e


def _session(server_url: str, preset: str) -> str:
    body = json.dumps({"workload": {"preset": preset}}).encode()
    req = urllib.request.Request(server_url + "/api/sessions", data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as res:
        return str(json.loads(res.read())["session_id"])


def test_diagnose_kv_starvation_and_export_png(page, server_url):
    sid = _session(server_url, "kv-starvation")
    page.goto(f"{server_url}/?session={sid}&preset=kv-starvation")
    wait_ready(page)
    # seek past the last step: the server clamps to the run's end
    page.evaluate("() => window.__servescope.api.send({ type: 'seek', step: 1000000000 })")
    page.wait_for_function(
        "() => window.__servescope.store.panes[0].run.record !== null"
        " && window.__servescope.store.panes[0].history.length > 5", timeout=15000)
    page.click("#btn-diagnose")
    page.wait_for_selector("#diagnosis .diagnosis-verdict", timeout=15000)
    verdict = page.text_content("#diagnosis .diagnosis-verdict")
    assert "kv_starvation" in verdict, verdict
    provenance = page.text_content("#diagnosis .diagnosis-provenance")
    assert "simulated run" in provenance
    assert page.locator("#diagnosis .diagnosis-evidence li").count() > 0
    flags = page.locator("#diagnosis .diagnosis-flags li").all_text_contents()
    assert flags and all(f.startswith("--") for f in flags), flags
    # the charts export as PNG files
    with page.expect_download(timeout=10000) as info:
        page.click("[data-export=png-kv]")
    download = info.value
    assert download.suggested_filename.endswith(".png")
    with open(download.path(), "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    with page.expect_download(timeout=10000) as info:
        page.click("[data-export=bench]")
    with open(info.value.path()) as f:
        assert json.load(f)["completed"] > 0
    assert page.errors == []
