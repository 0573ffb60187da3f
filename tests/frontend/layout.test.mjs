import assert from "node:assert/strict";
import test from "node:test";

import { blockAt, cellOrigin, gridLayout } from "../../frontend/static/js/render/layout.js";
import { rowHeight } from "../../frontend/static/js/render/timeline.js";

test("every block gets a cell inside the box", () => {
  for (const [n, w, h] of [[16, 400, 300], [16384, 900, 560], [97, 300, 300], [1, 50, 50]]) {
    const l = gridLayout(n, w, h);
    assert.ok(l.cols * l.rows >= n, `${n}: ${l.cols}x${l.rows}`);
    assert.ok(l.width <= w && l.height <= h, `${n}: ${l.width}x${l.height} in ${w}x${h}`);
  }
});

test("16,384 blocks in 900x560 still get cells of at least 4 px", () => {
  const l = gridLayout(16384, 900, 560);
  assert.ok(l.pitch >= 4, `pitch ${l.pitch}`);
});

test("hit testing inverts the cell origin", () => {
  const l = gridLayout(100, 200, 200);
  for (const b of [0, 7, 42, 99]) {
    const [x, y] = cellOrigin(l, b);
    assert.equal(blockAt(l, 100, x + 1, y + 1), b);
  }
  assert.equal(blockAt(l, 100, -1, 0), -1);
  assert.equal(blockAt(l, 100, l.width + 5, 0), -1);
});

test("timeline rows shrink with the number of requests, within 2-16 px", () => {
  assert.equal(rowHeight(10, 400), 16);
  assert.equal(rowHeight(100, 400), 4);
  assert.equal(rowHeight(5000, 400), 2);
});

test("charts: all stale ones at rest, only the stalest while playing", async () => {
  const { staleCharts } = await import("../../frontend/static/js/render/charts.js");
  assert.deepEqual(staleCharts([5, 5, 4, 3, 5], 6, false), [0, 1, 2, 3, 4]);
  assert.deepEqual(staleCharts([6, 5, 4, 3, 6], 6, true), [3]);
  assert.deepEqual(staleCharts([6, 6], 6, true), []);
});
