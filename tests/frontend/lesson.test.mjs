import { test } from "node:test";
import assert from "node:assert/strict";
import { HOLD_MS, Lesson } from "../../frontend/static/js/ui/lesson.js";
import { paceStepMs, parseScenario } from "../../frontend/static/js/state/url.js";

function setup() {
  const sent = [];
  const timers = [];
  const pane = { run: { record: null, reqs: [], index: new Map() } };
  const lesson = new Lesson({ send: (m) => sent.push(m), lead: () => pane, changed: () => {},
    setTimer: (fn) => timers.push(fn) });
  return { sent, timers, pane, lesson };
}
const rec = (iter, fields = {}) => ({ iter, step: iter, time_s: iter / 10, scheduled: [], preempted: [],
  finished: [], released: [], waiting: [], new: [], num_cached_tokens: {}, token_budget: 8, ...fields });

test("lesson playback steps one record at a time and stops at a chosen event", () => {
  const { sent, timers, pane, lesson } = setup();
  lesson.toggle();
  assert.deepEqual(sent, [{ type: "pause" }, { type: "step", n: 1 }]);
  pane.run.record = rec(0);
  lesson.onRecords([rec(0)], pane.run);
  assert.equal(timers.length, 1); // the next step is timed, not sent at once
  timers.shift()();
  assert.deepEqual(sent.at(-1), { type: "step", n: 1 });
  lesson.onRecords([rec(1, { preempted: ["a"] })], pane.run);
  assert.equal(lesson.on, false);
  assert.match(lesson.note, /^Paused at a preemption \(step 1\)/);
  assert.equal(timers.length, 0);
});

test("next event seeks to one already seen, else steps ahead until it arrives", () => {
  const { sent, pane, lesson } = setup();
  lesson.onRecords([rec(0), rec(1, { finished: ["a"] }), rec(2)], pane.run);
  pane.run.record = rec(0);
  lesson.next("finished");
  assert.deepEqual(sent.at(-1), { type: "seek", iter: 1 });
  pane.run.record = rec(2);
  lesson.next("preemption");
  assert.deepEqual(sent.at(-1), { type: "step", n: 16 });
  lesson.onRecords([rec(3)], pane.run);
  assert.deepEqual(sent.at(-1), { type: "step", n: 16 });
  lesson.onRecords([rec(4), rec(5, { preempted: ["b"] })], pane.run);
  assert.deepEqual(sent.at(-1), { type: "seek", iter: 5 });
  lesson.next("static_waste");
  lesson.onDone();
  assert.match(lesson.note, /^No static batch waste after this point/);
});

test("captions are held while lesson playback runs, unless a pause event replaces them", () => {
  const { pane, lesson } = setup();
  lesson.on = true;
  assert.equal(lesson.caption("one", 0), "one");
  assert.equal(lesson.caption("two", HOLD_MS / 2), "one");
  assert.equal(lesson.caption("two", HOLD_MS + 1), "two");
  lesson.onRecords([rec(7, { preempted: ["x"] })], pane.run);
  pane.run.record = rec(7);
  assert.equal(lesson.caption("three", HOLD_MS + 2), "three");
});

test("a next-event search that finds nothing goes back to where it started and says so", () => {
  const { sent, pane, lesson } = setup();
  lesson.onRecords([rec(0), rec(1), rec(2)], pane.run);
  pane.run.record = rec(2);
  lesson.next("prefix_cache_hit"); // H on a run without a cache hit
  assert.deepEqual(sent.at(-1), { type: "step", n: 16 });
  pane.run.record = rec(18);
  lesson.onRecords([rec(18)], pane.run);
  lesson.onDone(); // the run ended at record 18 without one
  assert.deepEqual(sent.at(-1), { type: "seek", iter: 2 });
  assert.match(lesson.note, /^No prefix-cache hit after this point in the run: staying at step 2\.$/);
  assert.equal(lesson.searching, null);
});

test("lesson playback times its steps at the URL's pace", () => {
  const delays = [];
  const pane = { run: { record: null, reqs: [], index: new Map() } };
  const lesson = new Lesson({ send: () => {}, lead: () => pane, changed: () => {},
    setTimer: (fn, ms) => delays.push(ms), stepMs: paceStepMs(parseScenario("?pace=10").pace) });
  lesson.toggle();
  lesson.onRecords([rec(0)], pane.run);
  assert.deepEqual(delays, [100]);
});
