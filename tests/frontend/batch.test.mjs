import assert from "node:assert/strict";
import test from "node:test";

import { sampleSegments } from "../../frontend/static/js/render/batch.js";

const segs = [{ offset: 0, n: 6 }, { offset: 6, n: 1 }, { offset: 7, n: 1 }];

test("each pixel takes the segment covering its centre", () => {
  // 10 tokens over 10 pixels: one token each; tokens 8 and 9 are unused budget
  assert.deepEqual([...sampleSegments(segs, 10, 10)], [0, 0, 0, 0, 0, 0, 1, 2, -1, -1]);
});

test("segments narrower than a pixel are sampled, not stacked", () => {
  const many = Array.from({ length: 512 }, (_, i) => ({ offset: i, n: 1 }));
  const at = sampleSegments(many, 8192, 64);
  assert.equal(at.length, 64);
  assert.equal(at[0], 64); // pixel 0 centre = token 64
  assert.equal(at[3], 448); // pixel 3 centre = token 448
  assert.equal(at[4], -1); // beyond the 512 scheduled tokens
});

test("the strip slides by the steps a frame added, or repaints", async () => {
  const { stripShift } = await import("../../frontend/static/js/render/batch.js");
  assert.equal(stripShift([1, 2, 3], [1, 2, 3]), 0);
  assert.equal(stripShift([1, 2, 3], [2, 3, 4]), 1);
  assert.equal(stripShift([1, 2, 3], [3, 4, 5]), 2);
  assert.equal(stripShift([1, 2], [1, 2, 3]), 1); // not full yet: still a slide left
  assert.equal(stripShift([1, 2, 3], [7, 8, 9]), 3); // nothing kept: every column is new
  assert.equal(stripShift([5, 6, 7], [4, 5, 6]), 3); // a seek back: all repainted
  assert.equal(stripShift([], [1]), 1);
});

test("bar labels share a row when they fit, else the later one takes the next row", async () => {
  const { labelRows } = await import("../../frontend/static/js/render/batch.js");
  // budget at the right end, max_num_seqs near the left: room for both on one row
  const wide = labelRows([{ x: 600, width: 100, align: "right" }, { x: 40, width: 150, align: "left" }], 600);
  assert.equal(wide.rows, 1);
  assert.deepEqual(wide.placed.map((p) => p.row), [0, 0]);
  // a narrow bar: the second label would overlap the first, so it goes below
  const narrow = labelRows([{ x: 240, width: 110, align: "right" }, { x: 15, width: 170, align: "left" }], 240);
  assert.deepEqual(narrow.placed.map((p) => p.row), [0, 1]);
  assert.equal(narrow.rows, 2);
  // a label is kept inside the canvas
  const edge = labelRows([{ x: 230, width: 100, align: "left" }], 240);
  assert.equal(edge.placed[0].left, 140);
});
