"""Reading the page's own state (window.__servescope) and canvas pixels from a test."""

from __future__ import annotations

PANE = """(i) => {
  const s = window.__servescope?.store; const p = s?.panes[i];
  if (!p) return null;
  return { cursor: p.run.cursor, history: p.history.length, status: p.status,
    playing: p.playing, owned: Array.from(p.run.owner).filter((x) => x >= 0).length,
    num_blocks: p.run.numBlocks, frames: s.frames, label: p.label,
    ids: p.run.ids.slice(0, 50), source: p.run.source };
}"""

CHART_POINTS = """() => {
  const e = window.__servescope.explore();
  return Object.fromEntries(e.charts.charts.map((c) => [c.spec.key, c.u.data[0].length]));
}"""

# Distinct non-background colours among the pool canvas's pixels (sampled every 3rd pixel).
GRID_COLOURS = """(id) => {
  const c = document.getElementById(id);
  const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
  const seen = new Set();
  for (let i = 0; i < d.length; i += 12) seen.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
  return seen.size;
}"""

# Pixels that are neither white, the free-cell grey nor transparent: cells coloured by owner.
OWNED_PIXELS = """(id) => {
  const c = document.getElementById(id);
  const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
  let n = 0;
  for (let i = 0; i < d.length; i += 4) {
    const [r, g, b, a] = [d[i], d[i + 1], d[i + 2], d[i + 3]];
    const grey = Math.abs(r - g) < 8 && Math.abs(g - b) < 8;
    if (a > 0 && !grey) n += 1;
  }
  return n;
}"""

# The same count for every canvas a selector matches.
OWNED_PIXELS_EACH = """(sel) => [...document.querySelectorAll(sel)].map((c) => {
  const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
  let n = 0;
  for (let i = 0; i < d.length; i += 4) {
    const grey = Math.abs(d[i] - d[i + 1]) < 8 && Math.abs(d[i + 1] - d[i + 2]) < 8;
    if (d[i + 3] > 0 && !grey) n += 1;
  }
  return n;
})"""


def pane(page, i=0):
    return page.evaluate(PANE, i)


def wait_ready(page, i=0, timeout_ms=15000):
    page.wait_for_function(
        "(i) => { const p = window.__servescope?.store?.panes[i];"
        " return p && p.run.numBlocks > 1; }",
        arg=i, timeout=timeout_ms)


def wait_requests(page, i=0, timeout_ms=20000):
    """Until the pane's request list (read in pages after init) holds all init.num_requests."""
    page.wait_for_function(
        "(i) => { const init = window.__servescope?.store?.panes[i]?.init;"
        " return init?.num_requests != null"
        " && (init.requests?.length ?? 0) === init.num_requests; }",
        arg=i, timeout=timeout_ms)


def wait_history(page, n, i=0, timeout_ms=20000):
    page.wait_for_function(
        "([i, n]) => (window.__servescope?.store?.panes[i]?.history.length ?? 0) >= n",
        arg=[i, n], timeout=timeout_ms)
