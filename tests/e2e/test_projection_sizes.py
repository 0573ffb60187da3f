"""Issue 31's projection for the back of the room, in a real Chromium at 1920x1080, 1280x720 and
1024x768, in explore and in compare, with the tour's note shown: every visible DOM text at least
2.5% of the viewport height and the caption and tour note at least 4%; every canvas that draws
text says the size it draws at (data-font-px, on the canvas or on a uPlot chart's box: see
docs/architecture.md) and it is as large, drawn at device pixels and never stretched; the page
does not scroll; every chart, panel and pane is whole, with room for a plot; the note covers
nothing. Screenshots of each size and view are kept."""

from __future__ import annotations

from pathlib import Path

import pytest
from pagestate import wait_ready

pytestmark = pytest.mark.e2e

SIZES = [(1920, 1080), (1280, 720), (1024, 768)]
TEXT, LEAD = 0.025, 0.04  # shares of the viewport's height
NOTE = "() => document.getElementById('lesson-note').textContent"

# Canvases that draw no text: pixels only.
NO_TEXT = "#kv-grid, canvas.kv, #batch-strip"
PAGE = (Path(__file__).parent / "projection_measure.js").read_text()
TWO_FRAMES = "() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))"


def check(page, screenshots, tag):
    """At each size: the screen's text, canvases and boxes; a screenshot of each."""
    for width, height in SIZES:
        page.set_viewport_size({"width": width, "height": height})
        # the views laid out again for this window: charts fitted to its boxes
        page.wait_for_function("([w, h]) => innerWidth === w && innerHeight === h",
                               arg=[width, height])
        page.wait_for_function(f"({PAGE}).fitted")
        page.evaluate(TWO_FRAMES)  # and drawn
        m = page.evaluate(f"({PAGE}).measure", [TEXT, LEAD, NO_TEXT])
        page.screenshot(path=str(screenshots / f"projection-{tag}-{width}x{height}.png"))
        where = f"{tag} at {width}x{height}"
        assert m["small"] == [], (where, m["small"][:10])
        assert set(m["lead"]) == {"caption", "lesson-note"}, (where, m["lead"])
        assert m["canvases"] == [], (where, m["canvases"])
        assert not m["scrolls"], where
        assert m["cut"] == [], (where, m["cut"][:10])
        assert m["covered"] == [], (where, m["covered"])
        # each chart whole, with a plot at least a line of text high
        assert m["plots"] and min(m["plots"]) >= m["text"], (where, m["plots"])


def test_projection_reads_from_the_back_of_the_room(page, server_url, screenshots):
    page.set_viewport_size({"width": 1920, "height": 1080})
    page.goto(server_url + "/?preset=kv-starvation&pace=20")
    wait_ready(page)
    page.keyboard.press("p")
    page.wait_for_selector("body.projection", state="attached")
    page.keyboard.press("t")  # the tour's opening note: its longest
    page.wait_for_function(f"() => ({NOTE})().startsWith('Tour:')")
    check(page, screenshots, "explore-tour")
    page.keyboard.press(" ")  # to the tour's first stop, a request picked: its block numbers
    page.wait_for_function(f"() => ({NOTE})().includes('Notice:')", timeout=60000)
    page.click("#lane-running .chip:not(.more)")
    page.wait_for_function("() => document.getElementById('kv-overlay').dataset.drawn === '1'")
    check(page, screenshots, "explore-stop")

    page.set_viewport_size({"width": 1920, "height": 1080})
    page.keyboard.press("c")
    page.wait_for_function("() => window.__servescope.store.panes.length === 4")
    for i in range(4):
        wait_ready(page, i)
    page.keyboard.press("t")  # the tour again, to a stop's note, over the four panes
    page.wait_for_function(f"() => ({NOTE})().startsWith('Tour:')")
    page.keyboard.press(" ")
    page.wait_for_function(f"() => ({NOTE})().includes('Notice:')", timeout=60000)
    check(page, screenshots, "compare-stop")
    assert page.errors == []
