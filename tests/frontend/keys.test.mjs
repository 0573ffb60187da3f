import assert from "node:assert/strict";
import test from "node:test";

import { actionForKey, sliderToSpeed, speedToSlider } from "../../frontend/static/js/ui/keys.js";

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
