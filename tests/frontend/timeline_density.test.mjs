import assert from "node:assert/strict";
import test from "node:test";

import { DensityView, stateColours } from "../../frontend/static/js/render/timeline_density.js";
import { STATES } from "../../frontend/static/js/state/timeline_window.js";
import { themeColours } from "../../frontend/static/js/ui/explore.js";

function fakeCanvas(width) {
  const calls = [];
  const ctx = { calls, measureText: (s) => ({ width: 6 * s.length }) };
  for (const m of ["fillRect", "fillText", "clearRect"]) {
    ctx[m] = (...args) => calls.push({ m, args, fillStyle: ctx.fillStyle });
  }
  return { clientWidth: width, width, height: 0, getContext: () => ctx, ctx };
}

// Two bins: the first with 1 request waiting, 2 waiting for their remote KV and 1 decoding;
// nothing ran in the second.
const answer = (kv) => ({
  start_s: 0, end_s: 2, bin_s: 1, states: STATES,
  columns: { t_s: [0, 1], waiting: [1, null], waiting_for_kv: [kv, null], prefill: [0, null],
    decode: [1, null], stalled: [0, null], preempted: [0, null] },
});

test("every state has a colour of its own in both themes, waiting for KV the queues' colour", () => {
  for (const dark of [false, true]) {
    const theme = { ...themeColours(dark), fontPx: dark ? 18 : 0 };
    const colours = stateColours(theme);
    assert.deepEqual(Object.keys(colours).sort(), [...STATES].sort());
    assert.equal(new Set(Object.values(colours)).size, STATES.length);
    assert.equal(colours.waiting_for_kv, theme.waiting_for_kv);
  }
});

test("requests waiting for remote KV are a band of their own over the waiting ones, named in the legend", () => {
  const theme = themeColours(false);
  const canvas = fakeCanvas(600);
  const layout = new DensityView(canvas, null).draw(answer(2), { theme, cursor_s: null });
  assert.equal(layout.max, 4);
  const fills = canvas.ctx.calls.filter((c) => c.m === "fillRect");
  const band = (colour) => fills.find((c) => c.fillStyle === colour && c.args[2] > 10); // not the legend's swatch
  const [, kvTop, , kvH] = band(theme.waiting_for_kv).args;
  const [, waitTop, , waitH] = band(theme.waiting).args;
  assert.ok(Math.abs(kvH - 2 * waitH) <= 1, `${kvH} vs ${waitH}`); // 2 requests against 1
  assert.equal(kvTop + kvH, waitTop); // stacked right over the waiting band
  const texts = canvas.ctx.calls.filter((c) => c.m === "fillText").map((c) => c.args[0]);
  assert.ok(texts.includes("waiting_for_kv"));
  const swatch = fills.find((c) => c.fillStyle === theme.waiting_for_kv && c.args[2] === 10);
  assert.ok(swatch, "the legend's swatch in the band's colour");
});

test("an engine that never waits for KV (not a P/D decode replica) has no such band nor legend entry", () => {
  const theme = themeColours(false);
  const canvas = fakeCanvas(600);
  new DensityView(canvas, null).draw(answer(0), { theme, cursor_s: null });
  assert.ok(!canvas.ctx.calls.some((c) => c.m === "fillRect" && c.fillStyle === theme.waiting_for_kv));
  const texts = canvas.ctx.calls.filter((c) => c.m === "fillText").map((c) => c.args[0]);
  assert.ok(!texts.includes("waiting_for_kv") && texts.includes("waiting") && texts.includes("preempted"));
});
