"""Issue 15 in a real Chromium: the whole run's overview strip fills while the session
simulates ahead; brushing a window seeks the page to its first record, shows the percentiles of
the requests finished in it (as the REST route gives them) and diagnoses exactly its records."""

from __future__ import annotations

import json
import urllib.parse
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


def _get(url: str):
    with urllib.request.urlopen(url, timeout=60) as res:
        return json.loads(res.read())


def test_brushing_the_overview_seeks_and_gives_the_windows_percentiles_and_diagnosis(
        page, server_url):
    sid = _session(server_url, "kv-starvation")
    page.goto(f"{server_url}/?session={sid}")
    wait_ready(page)
    total = _get(f"{server_url}/api/sessions/{sid}/summary")[0]["num_records"]  # run ended
    strip = page.locator("#overview-strip")
    page.wait_for_function(
        f"() => Number(document.getElementById('overview-strip').dataset.records) === {total}")
    box = strip.bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * 0.4, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.7, y, steps=5)
    page.mouse.up()
    page.wait_for_function("() => document.getElementById('overview-strip').dataset.window")
    window = json.loads(strip.get_attribute("data-window"))
    assert 0 < window["from_iter"] < window["to_iter"] < total - 1, window
    # the page seeks to the window's first record
    page.wait_for_function(
        f"() => window.__servescope.store.panes[0].run.record?.iter === {window['from_iter']}")
    # the panel's figures are the REST route's for the same window
    q = urllib.parse.urlencode({"start_s": window["start_s"], "end_s": window["end_s"]})
    expected = _get(f"{server_url}/api/sessions/{sid}/percentiles?{q}")
    page.wait_for_function("() => /finished in/.test("
                           "document.getElementById('percentiles-title').textContent)")
    assert f"Percentiles of {expected['num_requests']} requests" in page.text_content(
        "#percentiles-title")
    cells = page.eval_on_selector_all("#percentiles tr", "rows => rows.map(r => "
                                      "[...r.children].map(c => c.textContent))")
    p99 = expected["ttft_ms"]["p99"]
    assert cells[1] == ["TTFT", *(("-" if expected["ttft_ms"][k] is None else
                                   f"{expected['ttft_ms'][k]:.1f}")
                                  for k in ("p50", "p90", "p95", "p99"))], (cells, p99)
    page.click("#btn-diagnose-window")
    page.wait_for_function("() => /diagnosed records/.test("
                           "document.getElementById('overview-status').textContent)")
    assert (f"diagnosed records {window['from_iter']}-{window['to_iter']}"
            in page.text_content("#overview-status"))
    assert page.text_content("#diagnosis .diagnosis-verdict")
    assert page.errors == []
