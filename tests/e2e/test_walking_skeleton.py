"""Issue 2's browser check: the page connects, plays the demo, colours blocks and plots points."""

from __future__ import annotations

import pytest
from pagestate import CHART_POINTS, OWNED_PIXELS, pane, wait_history, wait_ready

pytestmark = pytest.mark.e2e


def test_play_demo_colours_blocks_and_charts_points(page, server_url, screenshots):
    page.goto(server_url + "/")
    wait_ready(page)
    assert page.evaluate(OWNED_PIXELS, "kv-grid") == 0  # nothing allocated before play
    page.click("#btn-play")
    wait_history(page, 40)
    page.wait_for_timeout(300)  # let the next frame draw
    state = pane(page)
    assert state["playing"]
    assert state["owned"] > 0, state
    assert page.evaluate(OWNED_PIXELS, "kv-grid") > 100
    points = page.evaluate(CHART_POINTS)
    assert points["throughput"] >= 40, points
    page.click("#btn-play")  # pause
    page.wait_for_timeout(400)
    paused = pane(page)["cursor"]
    page.wait_for_timeout(600)
    assert pane(page)["cursor"] == paused
    assert page.text_content("#caption").startswith(f"Step {paused}:")
    page.screenshot(path=str(screenshots / "explore.png"), full_page=True)
    assert page.errors == []
