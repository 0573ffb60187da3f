"""Issue 14's projection mode measured in a real Chromium at 1920x1080 and 1280x720: no visible
DOM text under 2.5% of the screen's height at 1080p and the caption at 4% or more (issue 31's
rule; test_projection_sizes.py measures it at every size and view), chart axes drawn in the same
size, no scrolling, the key bar over no canvas; it stays on in compare; a large label names the
mode; full queue lanes say "+N more"."""

from __future__ import annotations

import pytest
from pagestate import wait_history, wait_ready

pytestmark = pytest.mark.e2e

# Every element with its own visible text: its computed font size and box.
TEXTS = """() => {
  const out = [];
  const visible = (el) => { const r = el.getBoundingClientRect(); const s = getComputedStyle(el);
    return r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && s.display !== 'none'
      && r.bottom > 0 && r.right > 0 && r.top < innerHeight && r.left < innerWidth; };
  for (const el of document.querySelectorAll('body *')) {
    if (['SCRIPT', 'STYLE', 'OPTION'].includes(el.tagName)) continue;
    const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    if (!own || !visible(el)) continue;
    out.push({ tag: el.tagName, id: el.id, cls: String(el.className),
      text: el.textContent.trim().slice(0, 30), px: parseFloat(getComputedStyle(el).fontSize) });
  }
  return out;
}"""

LAYOUT = """() => {
  const keys = document.getElementById('keys').getBoundingClientRect();
  const overlaps = [...document.querySelectorAll('canvas')].filter((c) => {
    const r = c.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && r.bottom > keys.top + 0.5 && r.top < keys.bottom
      && r.right > keys.left && r.left < keys.right;
  }).map((c) => c.id || c.className);
  // every shown panel and canvas of the explorer lies above the key bar and inside the
  // window, and no panel hides content it would otherwise scroll to
  const shown = [...document.querySelectorAll('#explore .panel, #explore canvas')].filter((el) =>
    el.getBoundingClientRect().width > 0 && getComputedStyle(el).display !== 'none');
  const cut = shown.filter((el) => { const r = el.getBoundingClientRect();
    return r.bottom > keys.top + 0.5 || r.right > innerWidth + 0.5
      || (el.classList.contains('panel') && el.scrollHeight > el.clientHeight + 1); })
    .map((el) => el.id || el.className);
  const root = document.documentElement;
  return { panels: shown.filter((el) => el.classList.contains('panel')).length,
    scrollH: root.scrollHeight, scrollW: root.scrollWidth,
    innerH: innerHeight, innerW: innerWidth, overlaps, cut,
    axisFonts: window.__servescope.explore().charts.charts.map((c) => c.u.axes[1].font[0]) };
}"""


def measure(page, width, height):
    page.set_viewport_size({"width": width, "height": height})
    page.wait_for_function("([w, h]) => innerWidth === w && innerHeight === h", arg=[width, height])
    # the resize handler rebuilt the projected charts for this window's charts row
    page.wait_for_function("""() => { const box = document.getElementById('charts');
      const want = Math.max(160, Math.floor((box.clientWidth - 16) / 3));
      return window.__servescope.explore().charts.charts[0].u.width === want; }""")
    return page.evaluate(TEXTS), page.evaluate(LAYOUT)


def test_projection_reads_from_the_back_row(page, server_url, screenshots):
    page.set_viewport_size({"width": 1920, "height": 1080})
    page.goto(server_url + "/?preset=kv-starvation")
    wait_ready(page)
    page.wait_for_function(
        "() => window.__servescope.store.panes[0].init.preset === 'kv-starvation'")
    page.keyboard.press("p")
    page.wait_for_selector("body.projection #keys", state="visible")
    page.keyboard.press("Shift+ArrowRight")
    wait_history(page, 10)
    page.evaluate("() => window.__servescope.api.send({ type: 'seek', step: 60 })")
    page.wait_for_function("() => window.__servescope.store.panes[0].run.record?.step >= 60")
    texts, layout = measure(page, 1920, 1080)
    small = [t for t in texts if t["px"] < 0.025 * 1080]
    assert not small, small[:10]
    caption = next(t for t in texts if t["id"] == "caption")
    assert caption["px"] >= 0.04 * 1080, caption
    label = next(t for t in texts if t["id"] == "mode-label")
    assert "continuous batching" in label["text"] and label["px"] >= 28
    assert all(f.startswith(f"{round(texts[0]['px'])}px") or int(f.split("px")[0]) >= 20
               for f in layout["axisFonts"]), layout["axisFonts"]
    assert layout["scrollH"] <= layout["innerH"] and layout["scrollW"] <= layout["innerW"], layout
    assert layout["overlaps"] == [] and layout["cut"] == [], layout
    assert layout["panels"] == 3  # pool, batch and charts; the side panel and timeline hide
    more = page.eval_on_selector_all(".chip.more:not([hidden])",
                                     "els => els.map(e => e.textContent)")
    assert any(m.startswith("+") and m.endswith("more") for m in more), more
    page.screenshot(path=str(screenshots / "projection.png"))
    texts, layout = measure(page, 1280, 720)
    assert layout["scrollH"] <= layout["innerH"] and layout["scrollW"] <= layout["innerW"], layout
    assert layout["overlaps"] == [] and layout["cut"] == [], layout
    page.keyboard.press("c")
    page.wait_for_selector("#compare:not([hidden])")
    assert "projection" in page.get_attribute("body", "class")
    page.wait_for_function(
        "() => document.getElementById('mode-label').textContent.startsWith('Compare')")
    assert page.errors == []
