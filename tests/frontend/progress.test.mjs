import assert from "node:assert/strict";
import test from "node:test";

import {
  applyProgress, lastArrival, progressText, scrubMax, simulatedShare,
} from "../../frontend/static/js/state/progress.js";
import { createPane } from "../../frontend/static/js/state/store.js";

const INIT = { num_gpu_blocks: 8, block_size: 4, num_records: null, requests: [
  { id: "a", prompt_len: 4, output_len: 2, arrival_s: 0.0, arrival_step: null },
  { id: "b", prompt_len: 4, output_len: 2, arrival_s: 40.0, arrival_step: null },
  { id: "c", prompt_len: 4, output_len: 2, arrival_s: 10.0, arrival_step: null },
] };

test("the scrubber reaches every record simulated ahead, not only those received", () => {
  const pane = createPane(INIT);
  assert.equal(scrubMax(pane), 0);
  applyProgress([pane], { computed: [999], time_s: [10], done: [false], errors: [null] });
  assert.equal(scrubMax(pane), 999);
  assert.equal(simulatedShare(pane), 0.25); // 10 s of the last arrival at 40 s
  assert.match(progressText(pane), /simulating ahead: t = 10\.0 s of the last arrival at 40\.0 s, 1000 records/);
  applyProgress([pane], { computed: [4999], time_s: [52], done: [true], errors: [null] });
  assert.equal(scrubMax(pane), 4999);
  assert.equal(simulatedShare(pane), 1);
  assert.equal(progressText(pane), "simulated to the end: 5000 records");
});

test("a stopped simulation says why; each engine's entry goes to its own pane", () => {
  const panes = [createPane(INIT), createPane(INIT)];
  applyProgress(panes, { computed: [9, 3], time_s: [1, 0.5], done: [true, true], errors: [null, "disk full"] });
  assert.equal(panes[0].progress.error, null);
  assert.match(progressText(panes[1]), /^simulation stopped after 4 records: disk full$/);
});

test("the last arrival is the latest, whatever the order; none for a step-clock workload", () => {
  assert.equal(lastArrival(INIT), 40);
  assert.equal(lastArrival({ requests: [{ id: "x", arrival_s: null, arrival_step: 3 }] }), null);
  const pane = createPane({ ...INIT, requests: [{ id: "x", prompt_len: 1, output_len: 1, arrival_s: null, arrival_step: 3 }] });
  applyProgress([pane], { computed: [5], time_s: [0], done: [false], errors: [null] });
  assert.equal(simulatedShare(pane), 0);
});
