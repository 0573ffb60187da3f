import assert from "node:assert/strict";
import test from "node:test";

import {
  applyRecords, createPane, createStore, markDirty, onFrame, resetPane,
} from "../../frontend/static/js/state/store.js";
import { INIT, RECORDS } from "./scenario.mjs";

function fakeFrames() {
  const queue = [];
  return { queue, request: (fn) => queue.push(fn), run: () => queue.splice(0).forEach((f) => f()) };
}

test("many changes in one frame draw once, with every dirty key", () => {
  const frames = fakeFrames();
  const store = createStore(frames.request);
  const drawn = [];
  onFrame(store, (dirty) => drawn.push([...dirty].sort()));
  markDirty(store, "step");
  markDirty(store, "hover");
  markDirty(store, "step");
  assert.equal(frames.queue.length, 1);
  frames.run();
  assert.deepEqual(drawn, [["hover", "step"]]);
  markDirty(store, "speed");
  frames.run();
  assert.equal(drawn.length, 2);
});

test("nothing is drawn when nothing changed", () => {
  const frames = fakeFrames();
  const store = createStore(frames.request);
  onFrame(store, () => assert.fail("drew without a change"));
  frames.run();
  assert.equal(store.frames, 0);
});

test("records applied to a pane move its cursor and grow its history", () => {
  const frames = fakeFrames();
  const store = createStore(frames.request);
  store.panes.push(createPane(INIT, "A"));
  applyRecords(store, 0, RECORDS.slice(0, 3));
  assert.equal(store.panes[0].run.cursor, 2);
  assert.equal(store.panes[0].history.length, 3);
  resetPane(store, 0, INIT);
  assert.equal(store.panes[0].history.length, 0);
  assert.equal(store.panes[0].label, "A");
});
