import assert from "node:assert/strict";
import test from "node:test";

import { bindPlayback, drawControls } from "../../frontend/static/js/ui/controls.js";

/** A document of the controls' elements, each holding what drawControls writes. */
function fakeDoc() {
  const els = {};
  const el = (id) => els[id] ??= {
    id, value: "0", max: "0", textContent: "", dataset: {}, listeners: {},
    style: { props: {}, setProperty(k, v) { this.props[k] = v; }, getPropertyValue(k) { return this.props[k] ?? ""; } },
    classList: { toggle() {} },
    addEventListener(type, fn) { (this.listeners[type] ??= []).push(fn); },
    fire(type) { for (const fn of this.listeners[type] ?? []) fn({ target: this }); },
  };
  return { els, getElementById: el, querySelectorAll: () => [], addEventListener() {}, activeElement: null };
}

const pane = (iter, reach) => ({
  run: { record: { iter, step: iter + 3, time_s: 1, step_time_ms: 10 } },
  history: { lastIter: iter }, init: { requests: [], num_records: null },
  progress: { computed: 10, time_s: 1, done: false, error: null, reach, reach_s: 2, no_leap: null },
});

test("the scrubber's thumb is drawn where the position is, focused or not", () => {
  const doc = fakeDoc();
  const actions = new Proxy({}, { get: () => () => {} });
  bindPlayback(doc, actions);
  const scrub = doc.getElementById("scrub");
  doc.activeElement = scrub; // clicked once: focus stays on it while keys seek
  drawControls(doc, pane(4_207_687, 4_300_000), { playing: false, speed: 1 });
  assert.equal(scrub.max, "4300000");
  assert.equal(scrub.value, "4207687");
  scrub.fire("pointerdown"); // a hand holds the thumb: drawing leaves it
  scrub.value = "17";
  drawControls(doc, pane(4_207_690, 4_300_000), { playing: true, speed: 1 });
  assert.equal(scrub.value, "17");
  scrub.fire("pointerup");
  drawControls(doc, pane(4_207_691, 4_300_000), { playing: true, speed: 1 });
  assert.equal(scrub.value, "4207691");
});
