"""Issue 35's fleet view in a real Chromium at 1280x720 in projection: a session of three
replicas plays, each lane shows its replica, arrivals are drawn with the router's why on hover,
and a click on a lane opens that replica's blocks at the same simulated time."""

from __future__ import annotations

import pytest
from pagestate import wait_ready

pytestmark = pytest.mark.e2e

FLEET = "() => window.__servescope.store.panes[0].fleet"


def test_the_fleet_plays_and_a_replica_opens_on_click(small_page, server_url, screenshots):
    page = small_page
    page.goto(server_url + "/?replicas=3&router=round-robin&projection=1")
    wait_ready(page)
    page.wait_for_function(f"() => ({FLEET})()?.info.replicas === 3")
    page.evaluate("() => { window.__servescope.api.setSpeed(5); window.__servescope.api.play(); }")
    page.wait_for_function(f"() => ({FLEET})().arrivals.length >= 3", timeout=30000)
    page.evaluate("() => window.__servescope.api.pause()")
    canvas = page.locator("#fleet canvas.fleet-canvas")
    box = canvas.bounding_box()
    assert box["y"] + box["height"] <= 720 and box["width"] >= 1000  # on screen, full width
    assert float(canvas.get_attribute("data-font-px")) >= 18  # projection's text at 720p
    # hover on replica 1's lane: the why line names it
    lane = page.evaluate("() => { const c = document.querySelector('#fleet canvas');"
                         " const r = devicePixelRatio; const l = c.layout.lanes[1];"
                         " return [(l.textX + 10) / r, (l.y + l.h / 2) / r]; }")
    page.mouse.move(box["x"] + lane[0], box["y"] + lane[1])
    page.wait_for_function("() => document.getElementById('fleet-why').textContent"
                           ".startsWith('replica 1: click to watch its blocks')")
    page.screenshot(path=str(screenshots / "fleet-view.png"))
    t = page.evaluate(f"() => ({FLEET})().time_s")
    page.mouse.click(box["x"] + lane[0], box["y"] + lane[1])
    page.wait_for_function(f"() => ({FLEET})()?.info.replica === 1", timeout=30000)
    page.wait_for_function(f"(t) => ({FLEET})().time_s === t", arg=t, timeout=30000)
    assert page.get_attribute("#fleet canvas", "data-viewed") == "1"
    assert not page.errors


PANES = "() => window.__servescope.store.panes"


def test_two_routers_on_the_same_traffic_side_by_side(small_page, server_url, screenshots):
    # the prefix-routing lesson's traffic under round-robin and prefix-approx, in compare
    page = small_page
    compare = '[{"router":"round-robin"},{"router":"prefix-approx"}]'
    page.goto(server_url + "/?preset=lesson-prefix-routing&view=compare&projection=1"
              f"&compare={compare}")
    wait_ready(page, 1)  # the second pane
    page.wait_for_function(f"() => ({PANES})().length === 2 && ({PANES})().every("
                           "(p) => p.fleet?.info.replicas === 4)", timeout=30000)
    routers = page.evaluate(f"() => ({PANES})().map((p) => p.fleet.info.router)")
    assert routers == ["round-robin", "prefix-approx"]
    page.evaluate("() => { window.__servescope.api.setSpeed(2); window.__servescope.api.play(); }")
    page.wait_for_function(f"() => ({PANES})().every((p) => p.fleet.arrivals.length >= 20)",
                           timeout=60000)
    page.evaluate("() => window.__servescope.api.pause()")
    canvases = page.locator("#fleet canvas.fleet-canvas")
    assert canvases.count() == 2
    left, right = canvases.nth(0).bounding_box(), canvases.nth(1).bounding_box()
    # side by side, each about half the width, on screen at 1280x720
    assert left["x"] + left["width"] <= right["x"] and abs(left["y"] - right["y"]) < 1
    assert min(left["width"], right["width"]) >= 500
    assert max(left["y"] + left["height"], right["y"] + right["height"]) <= 720
    assert all(float(c.get_attribute("data-font-px")) >= 18 for c in canvases.all())
    # the same traffic: both fleets routed the same requests in the same order (each pane keeps
    # its newest arrivals, KEEP_ARRIVALS, and a pane may have paused an arrival or two later)
    kept = page.evaluate(f"() => ({PANES})().map((p) => p.fleet.arrivals.map("
                         "(a) => [a.request_id, a.replica]))")
    both = {rid for rid, _ in kept[0]} & {rid for rid, _ in kept[1]}
    assert len(both) >= 15
    left_pane, right_pane = ([(rid, r) for rid, r in pane if rid in both] for pane in kept)
    assert [rid for rid, _ in left_pane] == [rid for rid, _ in right_pane]
    # round-robin spreads them in turn; prefix-approx keeps a tenant's turns together
    replicas = [[r for _, r in left_pane], [r for _, r in right_pane]]
    assert all(b == (a + 1) % 4 for a, b in zip(replicas[0], replicas[0][1:], strict=False))
    assert replicas[1] != replicas[0]
    page.screenshot(path=str(screenshots / "fleet-compare.png"))
    assert not page.errors
