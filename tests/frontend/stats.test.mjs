import assert from "node:assert/strict";
import test from "node:test";

import { LogHistogram, Ring, percentileSorted } from "../../frontend/static/js/state/stats.js";

test("nearest-rank percentiles", () => {
  const xs = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
  assert.equal(percentileSorted(xs, 50), 5);
  assert.equal(percentileSorted(xs, 99), 10);
  assert.equal(percentileSorted(xs, 10), 1);
  assert.ok(Number.isNaN(percentileSorted([], 50)));
});

test("the ring keeps only the most recent values", () => {
  const ring = new Ring(3);
  for (const v of [100, 1, 2, 3]) ring.push(v);
  assert.deepEqual(ring.percentiles([0, 50, 100]), [1, 2, 3]);
});

test("the ring sorts numerically, not as strings", () => {
  const ring = new Ring(4);
  for (const v of [9, 10, 100, 2]) ring.push(v);
  assert.deepEqual(ring.percentiles([100]), [100]);
  assert.deepEqual(ring.percentiles([25]), [2]);
});

test("the log histogram's p99 is within 2% of the exact value", () => {
  const h = new LogHistogram();
  for (let i = 1; i <= 1000; i++) h.add(i * 0.1); // 0.1 .. 100 ms
  const p99 = h.percentile(99); // exact nearest rank: 99.0
  assert.ok(Math.abs(p99 - 99) / 99 < 0.02, `p99 ${p99}`);
  assert.ok(Number.isNaN(new LogHistogram().percentile(50)));
});
