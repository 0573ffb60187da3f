"""Issue 14's compare in a real Chromium: C opens the lesson's four modes in plain names on the
page's workload, and at the end of the demo the lesson table shows continuous batching above
static above naive in throughput, and chunked prefill below no chunking in P99 ITL; the
throughput charts share one y-scale; the picker runs a chosen pair."""

from __future__ import annotations

import pytest
from pagestate import wait_ready

pytestmark = pytest.mark.e2e

NAMES = ["naive", "static batching", "continuous batching, no chunking",
         "continuous batching + chunked prefill"]
ROWS = "rows => rows.map(r => [...r.cells].map(c => c.textContent))"
DONE = ("() => window.__servescope.store.panes.length === 4"
        " && window.__servescope.store.panes.every((p) => p.status === 'done')")


def test_compare_opens_with_the_four_lesson_modes(page, server_url, screenshots):
    page.goto(server_url + "/")
    wait_ready(page)
    page.keyboard.press("c")
    wait_ready(page, 3)
    rows = page.eval_on_selector_all("#lesson tbody tr", ROWS)
    assert [r[0] for r in rows] == NAMES
    # played to the end
    page.evaluate("() => { window.__servescope.api.setSpeed(50); window.__servescope.api.play(); }")
    page.wait_for_function(DONE, timeout=60000)
    page.wait_for_function(  # the table's next frame shows the end of every run
        "() => [...document.querySelectorAll('#lesson tbody tr')].every((r, i) =>"
        " Math.abs(Number(r.cells[1].textContent)"
        " - window.__servescope.store.panes[i].summary.output_throughput) <= 0.5)")
    rows = {r[0]: r for r in page.eval_on_selector_all("#lesson tbody tr", ROWS)}
    tput = {name: float(rows[name][1]) for name in NAMES}
    itl = {name: float(rows[name][3]) for name in NAMES}
    # at the end the table is each engine's whole-run summary from the server
    summaries = page.evaluate("() => window.__servescope.store.panes.map((p) => p.summary)")
    for name, summary in zip(NAMES, summaries, strict=True):
        assert abs(tput[name] - summary["output_throughput"]) <= 0.5, (name, tput, summary)
        assert abs(itl[name] - summary["p99_itl_ms"]) <= 0.05, (name, itl, summary)
    assert tput[NAMES[2]] > tput[NAMES[1]] > tput[NAMES[0]], tput
    assert tput[NAMES[3]] > tput[NAMES[1]], tput
    assert itl[NAMES[3]] < itl[NAMES[2]], itl
    scales = page.evaluate("() => window.__servescope.compare().panes.map("
                           "(p) => p.charts.charts[0].u.scales.y.max)")
    assert len(set(scales)) == 1 and scales[0] > 0, scales
    page.screenshot(path=str(screenshots / "compare.png"), full_page=True)
    boxes = page.locator("#compare-picker input[type=checkbox]")
    for i in range(boxes.count()):
        boxes.nth(i).set_checked(i in (1, 2))
    page.click("#compare-these")
    page.wait_for_function("() => window.__servescope.store.panes.length === 2")
    rows = page.eval_on_selector_all("#lesson tbody tr", ROWS)
    assert [r[0] for r in rows] == NAMES[1:3]
    assert page.errors == []
