import assert from "node:assert/strict";
import test from "node:test";

import {
  MAX_ROWS, rowWindow, SCROLL_ROWS, scrolledBy, spanColumns,
} from "../../frontend/static/js/render/timeline.js";

test("up to MAX_ROWS requests all get a row", () => {
  assert.deepEqual(rowWindow(0), [0, 1]);
  assert.deepEqual(rowWindow(37), [0, 37]);
  assert.deepEqual(rowWindow(MAX_ROWS), [0, MAX_ROWS]);
});

test("beyond MAX_ROWS the window moves in jumps, so rows stay put between jumps", () => {
  const starts = new Set();
  for (let n = MAX_ROWS + 1; n <= MAX_ROWS + 3 * SCROLL_ROWS; n++) {
    const [start, capacity] = rowWindow(n);
    assert.equal(capacity, MAX_ROWS);
    assert.ok(n - start <= MAX_ROWS, `${n}: ${n - start} rows`); // the newest always shows
    assert.ok(n - start > MAX_ROWS - SCROLL_ROWS, `${n}: only ${n - start} rows`);
    assert.equal(start % SCROLL_ROWS, 0);
    starts.add(start);
  }
  assert.equal(starts.size, 3); // three jumps for 3 * SCROLL_ROWS arrivals, not one per arrival
});

test("scrolledBy finds how many rows went off the top", () => {
  assert.equal(scrolledBy(["a", "b", "c"], ["a", "b", "c", "d"]), 0);
  assert.equal(scrolledBy(["a", "b", "c"], ["c", "d"]), 2);
  assert.equal(scrolledBy(["a", "b", "c"], ["b", "a"]), -1); // reordered: repaint
  assert.equal(scrolledBy(["a", "b"], ["x", "y"]), -1);
  assert.equal(scrolledBy([], ["x"]), -1);
});

test("span columns: at least one pixel, contiguous spans share no column twice", () => {
  const xOf = (t) => 10 + t * 100;
  assert.deepEqual(spanColumns({ t0_s: 0, t1_s: 0.001 }, xOf), [10, 11]);
  const a = spanColumns({ t0_s: 0, t1_s: 0.255 }, xOf);
  const b = spanColumns({ t0_s: 0.255, t1_s: 0.5 }, xOf);
  assert.deepEqual(a, [10, 35]);
  assert.equal(b[0], a[1]);
});
