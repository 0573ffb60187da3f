"""Issue 15's views at scale in a real Chromium: a run of thousands of requests draws its request
timeline as the density of requests by state (not a row each); brushing a window in the overview
narrows it, dragging across the timeline narrows it further until it draws one row per request
of that window (the server's rows for it); and a workload with an idle stretch gives the charts
a break (a null) there instead of a line."""

from __future__ import annotations

import json
import urllib.request

import pytest
from pagestate import wait_ready

pytestmark = pytest.mark.e2e

# 3,000 short requests at 30 a second: about 100 s of simulated time, a few in flight at once
MANY = {"synthetic": {"num_requests": 3000, "request_rate": 30, "seed": 4, "prompt_len_min": 16,
                      "prompt_len_max": 64, "output_len_min": 4, "output_len_max": 16}}


def _session(server_url: str, body: dict) -> tuple[str, str]:
    req = urllib.request.Request(server_url + "/api/sessions", data=json.dumps(body).encode(),
                                 method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as res:
        made = json.loads(res.read())
    return str(made["session_id"]), server_url + made["drive_url"]


def _get(url: str):
    with urllib.request.urlopen(url, timeout=60) as res:
        return json.loads(res.read())


def test_thousands_of_requests_are_a_density_until_brushing_and_dragging_zoom_to_rows(
        page, server_url):
    sid, drive = _session(server_url, {"workload": MANY})
    page.goto(drive)
    wait_ready(page)
    total = _get(f"{server_url}/api/sessions/{sid}/summary")[0]["num_records"]  # run ended
    timeline = page.locator("#timeline")
    page.wait_for_function("() => document.getElementById('timeline').dataset.mode === 'density'")
    assert "3000 requests: how many were in each state" in page.text_content("#timeline-info")
    page.wait_for_function(  # the whole run, once the simulation has ended
        f"() => Number(document.getElementById('overview-strip').dataset.records) === {total}")
    page.wait_for_function(f"() => window.__servescope.explore().timelineView.answer?.num_records"
                           f" === {total}")
    assert timeline.get_attribute("data-mode") == "density"
    # brush the middle 40% of the run in the overview strip: still too many requests for rows
    box = page.locator("#overview-strip").bounding_box()
    gutter = page.evaluate("() => Math.min(190, Math.floor("
                           "document.getElementById('overview-strip').clientWidth / 3))")
    x0, w = box["x"] + gutter, box["width"] - gutter
    y = box["y"] + box["height"] / 3
    page.mouse.move(x0 + w * 0.3, y)
    page.mouse.down()
    page.mouse.move(x0 + w * 0.7, y, steps=4)
    page.mouse.up()
    brushed = json.loads(page.wait_for_function(
        "() => document.getElementById('overview-strip').dataset.window").json_value())
    page.wait_for_function("(s) => window.__servescope.explore().timelineView.current()?.start_s"
                           " === s", arg=brushed["start_s"])
    assert timeline.get_attribute("data-mode") == "density"
    page.wait_for_function("() => document.getElementById('timeline-info').textContent"
                           ".includes('double-click for the whole run')")  # (drawn next frame)
    # drag across 2% of the timeline: a window of a second or so, a row per request in it
    timeline.scroll_into_view_if_needed()
    tb = timeline.bounding_box()
    scale = tb["width"] / page.evaluate("() => document.getElementById('timeline').width")
    left = tb["x"] + 64 * scale  # the label column
    tw = tb["x"] + tb["width"] - left
    page.mouse.move(left + tw * 0.5, tb["y"] + 60)
    page.mouse.down()
    page.mouse.move(left + tw * 0.52, tb["y"] + 60, steps=3)
    page.mouse.up()
    page.wait_for_function("() => document.getElementById('timeline').dataset.mode === 'rows'")
    window = json.loads(timeline.get_attribute("data-window"))
    assert brushed["start_s"] < window["start_s"] < window["end_s"] < brushed["end_s"]
    rows = page.evaluate("() => window.__servescope.explore().timelineLayout.ids")
    expected = _get(f"{server_url}/api/sessions/{sid}/timeline?start_s={window['start_s']}"
                    f"&end_s={window['end_s']}")["rows"]
    assert expected is not None and rows == [r["id"] for r in expected]
    assert 0 < len(rows) <= 200
    assert f"{len(rows)} requests in" in page.text_content("#timeline-info")
    # double-click: back to the whole run's density
    timeline.dblclick()
    page.wait_for_function("() => document.getElementById('timeline').dataset.mode === 'density'")
    assert page.errors == []


def test_an_idle_stretch_is_a_break_in_the_charts(page, server_url):
    reqs = [{"id": f"r{k}", "prompt_len": 64, "output_len": 8, "arrival_s": 0.1 * k}
            for k in range(4)]
    reqs += [{"id": f"s{k}", "prompt_len": 64, "output_len": 8, "arrival_s": 20 + 0.1 * k}
             for k in range(4)]
    sid, drive = _session(server_url, {"workload": {"requests": reqs}})
    page.goto(drive)
    wait_ready(page)
    total = _get(f"{server_url}/api/sessions/{sid}/summary")[0]["num_records"]
    page.evaluate("() => { const api = window.__servescope.api; api.setSpeed(100); api.play(); }")
    page.wait_for_function(f"() => window.__servescope.store.panes[0].history.length === {total}",
                           timeout=60000)
    page.wait_for_function(
        "() => window.__servescope.explore().charts.charts.every((c) =>"
        f" c.u.data[0].length === {total} + 1)")
    charts = page.evaluate("""() => window.__servescope.explore().charts.charts.map((c) => {
        const steps = new Set(window.__servescope.store.panes[0].history.cols.t_s);
        const [x, ...ys] = c.u.data; const g = x.findIndex((t) => !steps.has(t));
        return { key: c.spec.key, x: x[g], before: x[g - 1], after: x[g + 1],
                 allNull: ys.every((y) => y[g] === null) }; })""")
    for c in charts:
        # the break lies in the idle stretch between the first four and the last four requests
        assert c["allNull"] and c["before"] < c["x"] < c["after"], c  # the point added
        assert c["before"] < 20 < c["after"], c
    assert page.errors == []
