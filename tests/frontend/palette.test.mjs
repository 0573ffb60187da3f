import assert from "node:assert/strict";
import test from "node:test";

import { cssFor, hexToRgb, inkFor, packedFor, rgbFor } from "../../frontend/static/js/state/palette.js";

test("the first 36 request colours are pairwise distinct", () => {
  const seen = new Set();
  for (let i = 0; i < 36; i++) seen.add(cssFor(i));
  assert.equal(seen.size, 36);
});

test("colours are stable: the same index gives the same colour", () => {
  assert.deepEqual(rgbFor(5), rgbFor(5));
  assert.equal(cssFor(0), "rgb(204, 102, 119)"); // Tol muted rose, #cc6677
});

test("the second tier is lighter than the first", () => {
  const sum = (c) => c[0] + c[1] + c[2];
  assert.ok(sum(rgbFor(13)) > sum(rgbFor(1)));
  assert.ok(sum(rgbFor(25)) < sum(rgbFor(1)));
});

test("packed colours are little-endian RGBA", () => {
  const [r, g, b] = hexToRgb("#cc6677");
  const v = packedFor(0);
  assert.equal(v & 255, r);
  assert.equal((v >> 8) & 255, g);
  assert.equal((v >> 16) & 255, b);
  assert.equal(v >>> 24, 255);
});

test("ink contrasts with its background", () => {
  assert.equal(inkFor(1), "#fff"); // indigo
  assert.equal(inkFor(2), "#000"); // sand
});

test("no colour repeats within any 4096 consecutive requests, however deep in the workload", () => {
  for (const start of [0, 36, 20_000, 999_000]) {
    const seen = new Set();
    for (let i = start; i < start + 4096; i++) seen.add(packedFor(i));
    assert.equal(seen.size, 4096, `from ${start}`);
  }
});
