"""Issue 15 in a real Chromium: the whole run's overview strip fills while the session
simulates ahead; brushing a window seeks the page to its first record, shows the percentiles of
the requests finished in it (as the REST route gives them) and diagnoses exactly its records; a
28k-block pool is a density map that drills into a region's cells and back."""

from __future__ import annotations

import json
import re
import urllib.parse
import urllib.request

import pytest
from pagestate import wait_ready

pytestmark = pytest.mark.e2e


def _session(server_url: str, preset: str) -> tuple[str, str]:
    """(session id, the link that drives it: sessions are private to their token)."""
    body = json.dumps({"workload": {"preset": preset}}).encode()
    req = urllib.request.Request(server_url + "/api/sessions", data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as res:
        made = json.loads(res.read())
    return str(made["session_id"]), server_url + made["drive_url"]


def _get(url: str):
    with urllib.request.urlopen(url, timeout=60) as res:
        return json.loads(res.read())


def test_brushing_the_overview_seeks_and_gives_the_windows_percentiles_and_diagnosis(
        page, server_url):
    sid, drive = _session(server_url, "kv-starvation")
    held = []  # the whole run's percentiles, answered only after the brush's own
    whole_run = re.compile(r"/percentiles\?$")
    page.route(whole_run, lambda route: held.append(route))
    page.goto(drive)
    wait_ready(page)
    total = _get(f"{server_url}/api/sessions/{sid}/summary")[0]["num_records"]  # run ended
    strip = page.locator("#overview-strip")
    for _ in range(2400):  # the strip's refreshes wait for their percentiles: answer those
        if strip.get_attribute("data-records") == str(total):  # before the last one
            break
        for route in held:
            route.continue_()
        held.clear()
        page.wait_for_timeout(50)
    else:  # bounded, so that a strip that never fills fails the test instead of hanging it
        raise AssertionError(f"the strip shows {strip.get_attribute('data-records')} of "
                             f"{total} records: {page.text_content('#overview-status')}")
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
    title = f"Percentiles of {expected['num_requests']} requests"
    assert title in page.text_content("#percentiles-title")
    assert held, "the page asked for the whole run's percentiles before the brush"
    with page.expect_response(lambda r: r.url.endswith("/percentiles?")):
        for route in held:
            route.continue_()
    page.unroute(whole_run)
    page.evaluate("() => new Promise(r => setTimeout(r, 50))")  # its handler has run
    assert title in page.text_content("#percentiles-title")  # a late answer does not win
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


def test_a_28k_block_pool_is_a_density_map_after_brushing_and_drills_into_cells(
        page, server_url):
    body = json.dumps({"workload": {"preset": "demo"},
                       "config": {"num_gpu_blocks": 28027}}).encode()
    req = urllib.request.Request(server_url + "/api/sessions", data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as res:
        made = json.loads(res.read())
    sid = made["session_id"]
    page.goto(server_url + made["drive_url"])
    wait_ready(page)
    total = _get(f"{server_url}/api/sessions/{sid}/summary")[0]["num_records"]
    page.wait_for_function(
        f"() => Number(document.getElementById('overview-strip').dataset.records) === {total}")
    box = page.locator("#overview-strip").bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * 0.3, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.5, y, steps=4)
    page.mouse.up()
    window = json.loads(page.wait_for_function(
        "() => document.getElementById('overview-strip').dataset.window").json_value())
    page.wait_for_function(
        f"() => window.__servescope.store.panes[0].run.record?.iter === {window['from_iter']}")
    grid = page.locator("#kv-grid")
    assert grid.get_attribute("data-mode") == "density"
    assert "14 blocks a cell" in page.text_content("#pool-info")
    # drill into the middle of the map: a region of 1024 blocks around the group clicked
    gb = grid.bounding_box()
    grid.click(position={"x": gb["width"] / 2, "y": gb["height"] / 2})
    page.wait_for_function("() => document.getElementById('kv-grid').dataset.mode === 'cells'")
    start, end = map(int, grid.get_attribute("data-region").split("-"))
    assert 0 < start < end <= 28027 and end - start == 1024
    # its top-left cell is its first block: hovering it names that block
    grid.hover(position={"x": 1, "y": 1})
    page.wait_for_function(f"() => window.__servescope.explore().hoverBlock === {start}")
    assert page.is_visible("#pool-whole")
    assert f"blocks {start}-{end - 1}, cell by cell" in page.text_content("#pool-info")
    page.click("#pool-whole")
    page.wait_for_function("() => document.getElementById('kv-grid').dataset.mode === 'density'")
    assert page.errors == []
