import assert from "node:assert/strict";
import test from "node:test";

import { DENSITY_ABOVE, groupSize, poolDensity, regionAround } from "../../frontend/static/js/state/pool_density.js";

function run(numBlocks, used, cached) {
  const owner = new Int32Array(numBlocks).fill(-1);
  const c = new Uint8Array(numBlocks);
  for (const b of used) owner[b] = 7;
  for (const b of cached) c[b] = 1;
  return { numBlocks, owner, cached: c };
}

test("groups count used, cached-free and free blocks; a used block that is cached counts as used", () => {
  const r = run(10, [0, 1, 5], [1, 2, 9]);
  const d = poolDensity(r, 4); // groups: 0-3, 4-7, 8-9
  assert.equal(d.groups, 3);
  assert.deepEqual([...d.used], [2, 1, 0]);
  assert.deepEqual([...d.cached], [1, 0, 1]);
  assert.deepEqual([...d.free], [1, 3, 1]);
});

test("28,027 blocks make at most 2,048 groups; small pools are not aggregated", () => {
  assert.equal(groupSize(28_027), 14);
  assert.ok(Math.ceil(28_027 / groupSize(28_027)) <= 2048);
  assert.ok(DENSITY_ABOVE >= 4096 && 513 < DENSITY_ABOVE);
});

test("a drill-down region is centred on the group and stays inside the pool", () => {
  assert.deepEqual(regionAround(1000, 14, 28_027), [13495, 14519]);
  assert.deepEqual(regionAround(0, 14, 28_027), [0, 1024]);
  assert.deepEqual(regionAround(2001, 14, 28_027), [27003, 28027]);
  assert.deepEqual(regionAround(3, 4, 100), [0, 100]);
});
