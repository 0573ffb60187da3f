import assert from "node:assert/strict";
import test from "node:test";

import {
  applyProgress, formatWait, lastArrival, progressText, scrubMax, secondsToGo, simulatedShare,
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

test("past the stored records the scrubber reaches where the scout has run the engine", () => {
  const pane = createPane(INIT);
  applyProgress([pane], { computed: [999], time_s: [10], done: [false], errors: [null], reach: [7999], reach_s: [30] });
  assert.equal(scrubMax(pane), 7999);
  assert.equal(simulatedShare(pane), 0.75); // a seek reaches 30 s of the last arrival at 40 s
  assert.match(progressText(pane), /1000 records; seeks reach t = 30\.0 s \(from checkpoints\)$/);
  applyProgress([pane], { computed: [999], time_s: [10], done: [false], errors: [null], reach: [999], reach_s: [10] });
  assert.equal(scrubMax(pane), 999);
  pane.history.lastIter = 7800; // records received from an earlier leap, past what is stored
  assert.equal(scrubMax(pane), 7800);
  assert.doesNotMatch(progressText(pane), /seeks reach/);
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

const progress = (time_s, extra = {}) => ({ computed: [Math.round(time_s * 100)], time_s: [time_s],
  done: [false], errors: [null], ...extra });

test("while it simulates, the wait to the last arrival at the rate measured since the run began", () => {
  const pane = createPane(INIT); // last arrival at 40 s
  applyProgress([pane], progress(2), 1000);
  applyProgress([pane], progress(2.5), 2500);
  assert.equal(secondsToGo(pane), null); // 1.5 s measured: too short to say
  assert.doesNotMatch(progressText(pane), /to go/);
  applyProgress([pane], progress(4), 9000); // 2 simulated seconds in 8 s: 0.25 a second
  assert.equal(secondsToGo(pane), (40 - 4) / 0.25);
  assert.match(progressText(pane), /t = 4\.0 s of the last arrival at 40\.0 s, 401 records, about 2 min to go$/);
  applyProgress([pane], progress(44), 11000); // past the last arrival: draining
  assert.equal(secondsToGo(pane), 0);
  applyProgress([pane], progress(50, { done: [true] }), 12000);
  assert.equal(secondsToGo(pane), null);
});

test("progress that goes back in time is measured afresh; a stopped or step-clock run has no wait", () => {
  const pane = createPane(INIT);
  applyProgress([pane], progress(10), 0);
  applyProgress([pane], progress(30), 4000);
  assert.equal(secondsToGo(pane), (40 - 30) / 5);
  applyProgress([pane], progress(1), 5000); // back in time: measured from here
  assert.equal(secondsToGo(pane), null);
  applyProgress([pane], progress(2), 9000); // 1 simulated second in 4 s
  assert.equal(secondsToGo(pane), (40 - 2) / 0.25);
  applyProgress([pane], progress(3, { errors: ["disk full"] }), 13000);
  assert.equal(secondsToGo(pane), null);
  const steps = createPane({ ...INIT, requests: [{ id: "x", prompt_len: 1, output_len: 1, arrival_s: null, arrival_step: 3 }] });
  applyProgress([steps], progress(0), 0);
  applyProgress([steps], progress(5), 10000);
  assert.equal(secondsToGo(steps), null);
});

test("a wait reads as an estimate: seconds, then minutes, then hours", () => {
  assert.equal(formatWait(0.4), "0 s");
  assert.equal(formatWait(89.4), "89 s");
  assert.equal(formatWait(90), "2 min");
  assert.equal(formatWait(3600), "60 min");
  assert.equal(formatWait(89.4 * 60), "89 min");
  assert.equal(formatWait(90 * 60), "1 h 30 min");
  assert.equal(formatWait(2 * 3600 + 5 * 60), "2 h 5 min");
});

test("a long run that cannot leap says why beside the progress", () => {
  const pane = { init: { requests: [{ arrival_s: 40 }] }, history: { lastIter: 0 } };
  applyProgress([pane], { computed: [999], time_s: [10], done: [false], errors: [null], reach: [999],
    reach_s: [10], no_leap: ["the static policy is a contrast to vLLM V1's scheduler and has no checkpoints"] });
  assert.match(progressText(pane), /1000 records; a seek further waits for the simulation: the static policy is a contrast/);
  applyProgress([pane], { computed: [999], time_s: [10], done: [false], errors: [null], reach: [999], reach_s: [10], no_leap: [null] });
  assert.doesNotMatch(progressText(pane), /waits for the simulation/);
});
