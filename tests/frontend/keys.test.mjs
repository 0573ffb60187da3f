import assert from "node:assert/strict";
import test from "node:test";

import { actionForKey, keyHandler, sliderToSpeed, speedToSlider } from "../../frontend/static/js/ui/keys.js";

test("space toggles, arrows step, shift takes ten", () => {
  assert.deepEqual(actionForKey({ key: " " }), { type: "toggle" });
  assert.deepEqual(actionForKey({ key: "ArrowRight" }), { type: "step", n: 1 });
  assert.deepEqual(actionForKey({ key: "ArrowLeft", shiftKey: true }), { type: "step", n: -10 });
});

test("plus and minus change speed; 1-4 pick the lesson's four modes", () => {
  assert.equal(actionForKey({ key: "+" }).dir, 1);
  assert.equal(actionForKey({ key: "-" }).dir, -1);
  assert.equal(actionForKey({ key: "1" }).mode.config.policy, "naive");
  assert.equal(actionForKey({ key: "4" }).mode.config.policy, "vllm-v1");
  assert.equal(actionForKey({ key: "5" }), null);
  assert.equal(actionForKey({ key: "x" }), null);
});

test("the speed slider is logarithmic from 0.1x to 100x", () => {
  assert.equal(sliderToSpeed(-1), 0.1);
  assert.equal(sliderToSpeed(2), 100);
  assert.equal(sliderToSpeed(speedToSlider(5)), 5);
});

// The page's handlers as fakes that record what a key asked of them.
function fakePage({ role = "driver", lessonOn = false, scenario = {} } = {}) {
  const calls = [];
  const rec = (name) => (...args) => calls.push([name, ...args]);
  const page = {
    store: { role, panes: [] },
    scenario: { speed: 1, view: "explore", projection: false, config: { block_size: 16 }, ...scenario },
    lesson: { on: lessonOn, tour: null, toggle: rec("lesson.toggle"), startTour: rec("lesson.startTour"), next: rec("lesson.next") },
    playback: { toggle: rec("toggle"), stepBy: rec("stepBy"), seekIndex: rec("seekIndex"), setSpeed: rec("setSpeed") },
    views: { setView: rec("setView"), setProjection: rec("setProjection") },
    applyConfig: rec("applyConfig"),
  };
  return { page, calls };
}

function press(page, key, { shiftKey = false, target = {} } = {}) {
  let prevented = false;
  keyHandler(page)({ key, shiftKey, target, preventDefault: () => { prevented = true; } });
  return prevented;
}

test("keys reach playback, the lesson, the views and the config", () => {
  const { page, calls } = fakePage();
  for (const key of [" ", "ArrowLeft", "Home", "+", "L", "t", "p", "c", "Escape", "2"]) assert.ok(press(page, key));
  press(page, "ArrowRight", { shiftKey: true });
  assert.deepEqual(calls, [
    ["toggle"], ["stepBy", -1], ["seekIndex", 0], ["setSpeed", 2], ["lesson.toggle"], ["lesson.startTour"],
    ["setProjection", true], ["setView", "compare"], ["setProjection", false], ["setView", "explore"],
    ["applyConfig", { block_size: 16, policy: "static" }], ["stepBy", 10],
  ]);
});

test("space pauses the lesson while it runs; C in compare goes back to explore", () => {
  const { page, calls } = fakePage({ lessonOn: true, scenario: { view: "compare" } });
  press(page, " ");
  press(page, "c");
  assert.deepEqual(calls, [["lesson.toggle"], ["setView", "explore"]]);
});

test("a follower's keys change only its own page; text fields keep their keys", () => {
  const { page, calls } = fakePage({ role: "follower" });
  for (const key of [" ", "ArrowRight", "End", "+", "1", "L", "t"]) assert.equal(press(page, key), false);
  assert.ok(press(page, "p"));
  const field = { closest: (sel) => (sel.includes("input[type=text]") ? {} : null) };
  assert.equal(press(page, "c", { target: field }), false);
  assert.equal(press(page, "x"), false);
  assert.deepEqual(calls, [["setProjection", true]]);
});
