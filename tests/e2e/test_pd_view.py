"""Issue 36's P/D view in a real Chromium at 1280x720: the P/D lesson preset plays in compare
(colocated | P/D 1:1); the P/D pane draws both pools and a KV transfer; seeking into a transfer
shows its request waiting for remote KV on the decode side; drill-down on the decode replica
shows that request's blocks allocated before its KV arrived, and on the prefill replica the
blocks of a request being prefilled."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest
from pagestate import wait_ready

pytestmark = pytest.mark.e2e

PD = "() => window.__servescope.store.panes[1]?.fleet"
RUN = "() => window.__servescope.store.panes[1].run"
VARIANTS = [{}, {"prefill": {"replicas": 1}, "decode": {"replicas": 1}}]
# The longest transfer the P/D pane has seen, to seek into.
LONGEST = f"""() => {{ const ts = ({PD})().transfers;
  return ts.reduce((a, t) => (t.done_s - t.start_s > a.done_s - a.start_s ? t : a), ts[0]); }}"""


def seek(page, time_s: float) -> None:
    page.evaluate("(t) => window.__servescope.api.send({type: 'seek', time_s: t})", time_s)


def click_lane(page, pool: str) -> None:
    canvas = page.locator('#fleet canvas[data-pane="1"]')
    box = canvas.bounding_box()
    x, y = page.evaluate("(pool) => { const c = document.querySelector("
                         "'#fleet canvas[data-pane=\"1\"]'); const r = devicePixelRatio;"
                         " const l = c.layout.lanes.find((l) => l.pool === pool);"
                         " return [(l.textX + 10) / r, (l.y + l.h / 2) / r]; }", pool)
    page.mouse.click(box["x"] + x, box["y"] + y)
    page.wait_for_function(f"(pool) => ({PD})()?.info.pool === pool", arg=pool, timeout=60000)


def test_the_pd_lesson_plays_and_drills_into_both_pools(small_page, server_url, screenshots):
    page = small_page
    page.goto(server_url + "/?preset=lesson-pd&view=compare"
              f"&compare={quote(json.dumps(VARIANTS))}")
    wait_ready(page, 1)
    page.wait_for_function(f"() => ({PD})()?.info.pools?.decode.replicas === 1", timeout=60000)
    page.evaluate("() => { window.__servescope.api.setSpeed(2); window.__servescope.api.play(); }")
    page.wait_for_function(f"() => ({PD})().transfers.length >= 2", timeout=60000)
    page.evaluate("() => window.__servescope.api.pause()")
    canvas = page.locator('#fleet canvas[data-pane="1"]')
    pools = page.evaluate("() => document.querySelector('#fleet canvas[data-pane=\"1\"]')"
                          ".layout.lanes.map((l) => l.pool)")
    assert pools == ["prefill", "decode"]
    page.wait_for_function("() => Number(document.querySelector('#fleet canvas[data-pane=\"1\"]')"
                           ".dataset.transfers) >= 1")
    # into the middle of the longest transfer: its request waits for its KV on the decode side
    tr = page.evaluate(LONGEST)
    seek(page, (tr["start_s"] + tr["done_s"]) / 2)
    page.wait_for_function(f"(id) => ({PD})().pools.decode[0].waiting_for_kv.includes(id)",
                           arg=tr["request_id"], timeout=60000)
    page.screenshot(path=str(screenshots / "pd-view.png"))
    # drill down on the decode replica: the request holds its blocks, its KV still in flight
    click_lane(page, "decode")
    page.wait_for_function(f"(id) => ({RUN})().record?.waiting_for_kv?.includes(id)"
                           f" && ({RUN})().tables.get(id)?.length > 0",
                           arg=tr["request_id"], timeout=60000)
    assert canvas.get_attribute("data-viewed") == "decode 0"
    # drill down on the prefill replica, just before that request's prefill ended: its blocks
    click_lane(page, "prefill")
    seek(page, tr["ready_s"] - 1e-4)
    page.wait_for_function(f"(id) => ({RUN})().tables.get(id)?.length > 0",
                           arg=tr["request_id"], timeout=60000)
    assert not page.errors



def test_a_form_edit_then_the_pd_variant_runs(small_page, server_url):
    """The page turns async_scheduling on for a model on a GPU (vLLM's default); a P/D pane's
    pools schedule synchronously, so a config applied in the form and then compared with the
    P/D variant must not carry it there (the server refuses an async pool, naming
    prefill.async_scheduling)."""
    page = small_page
    page.goto(server_url + "/?preset=lesson-pd")
    wait_ready(page)
    page.check("#field-async_scheduling")  # what the page defaults to on a GPU
    page.fill("#field-max_num_seqs", "64")
    page.click("#apply")
    page.wait_for_function("() => window.__servescope.store.panes[0].init?.config"
                           "?.max_num_seqs === 64", timeout=60000)
    page.keyboard.press("c")
    # the compare's own init redraws the picker with its panes ticked: tick boxes after it
    page.wait_for_function("() => document.querySelectorAll('#compare-picker input:checked')"
                           ".length >= 2", timeout=60000)
    for box in page.locator("#compare-picker input").all():
        box.uncheck()
    page.locator("#compare-picker label", has_text="lesson-pd: colocated").locator("input").check()
    page.locator("#compare-picker label", has_text="lesson-pd: P/D 1:1").locator("input").check()
    page.click("#compare-these")
    page.wait_for_function(f"() => ({PD})()?.info.pools?.decode.replicas === 1", timeout=60000)
    configs = page.evaluate("() => window.__servescope.store.panes.map((p) => p.init.config)")
    assert [c["max_num_seqs"] for c in configs] == [64, 64]
    assert configs[0]["async_scheduling"] is True  # the colocated pane keeps the page's
    assert configs[1]["async_scheduling"] is False  # the P/D pane's viewed replica: a pool
    assert not page.is_visible("#error")
    assert not page.errors
