import assert from "node:assert/strict";
import test from "node:test";

import { numberFontPx } from "../../frontend/static/js/render/kvgrid.js";

test("projected, block numbers are drawn at the type size or not at all", () => {
  assert.equal(numberFontPx(31, 22, 18), 18); // two digits fit a 31-pixel cell
  assert.equal(numberFontPx(31, 220, 18), 0); // three do not: no numbers
  assert.equal(numberFontPx(15, 3, 20), 0); // a cell smaller than the type: no numbers
  assert.equal(numberFontPx(40, 5, 19.2), 20); // whole pixels, never below the rule
});

test("unprojected, numbers are 55% of a cell from 14-pixel cells up", () => {
  assert.equal(numberFontPx(13, 5), 0);
  assert.equal(numberFontPx(14, 5), 8);
  assert.equal(numberFontPx(30, 5), 16);
});
