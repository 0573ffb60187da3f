import assert from "node:assert/strict";
import test from "node:test";

import { GAP_MIN_S, gapIndices, gapThreshold, withGaps } from "../../frontend/static/js/state/gaps.js";
import { appendRecord, createHistory } from "../../frontend/static/js/state/history.js";
import { applyRecord, createRun } from "../../frontend/static/js/state/reduce.js";
import { entry, init, rec } from "./helpers.mjs";

// Request a decodes in steps of 10 ms from 0 to 0.05 s; b arrives at 5 s, after an idle
// stretch, and decodes from there: the charts must not draw a line from 0.05 s to 5 s.
function idleRun() {
  const records = [];
  let step = 0;
  for (const [id, t0] of [["a", 0], ["b", 5]]) {
    for (let k = 0; k < 5; k++) {
      records.push(rec({ step, iter: step, time_s: t0 + k * 0.01, running: [id],
        scheduled: [entry(id, 1, 10 + k)], arrivals: k === 0 ? [id] : [] }));
      step += 1;
    }
  }
  const run = createRun(init());
  const h = createHistory();
  for (const r of records) {
    applyRecord(run, r);
    appendRecord(h, r, run);
  }
  return h;
}

test("an idle stretch gets one null point between the steps around it, in every series", () => {
  const h = idleRun();
  const [x, kv, rate] = withGaps(h.cols.t_s, h.cols.start_s,
    [h.cols.kv_usage_pct, h.cols.output_tokens_per_s], h.cols.iter);
  assert.equal(x.length, h.length + 1);
  const g = kv.indexOf(null);
  assert.equal(g, 5);
  assert.equal(rate[g], null);
  assert.ok(x[g - 1] < x[g] && x[g] < x[g + 1]);
  assert.ok(x[g] > 0.05 && x[g] < 5, `the null sits inside the idle stretch: ${x[g]}`);
  // the points themselves are the history's, in order
  assert.deepEqual(x.filter((_, i) => i !== g), h.cols.t_s);
  assert.deepEqual(kv.filter((_, i) => i !== g), h.cols.kv_usage_pct);
});

test("back-to-back steps give no gap and the arrays come back as they are", () => {
  const ends = [0.01, 0.02, 0.03];
  const starts = [0, 0.01, 0.02];
  const ys = [[1, 2, 3]];
  const out = withGaps(ends, starts, ys);
  assert.equal(out[0], ends);
  assert.equal(out[1], ys[0]);
  assert.deepEqual(withGaps([], [], [[]]), [[], []]);
});

test("the threshold is GAP_MIN_S, or 1/400 of a long span; only longer idle stretches count", () => {
  assert.equal(gapThreshold(10), GAP_MIN_S);
  assert.equal(gapThreshold(4000), 10);
  const ends = [1, 2, 3.2, 3.3];
  const starts = [0, 1.1, 2.9, 3.25];
  assert.deepEqual(gapIndices(ends, starts, 0.25), [2]); // 0.1 and 0.05 s idle are no gaps
  assert.deepEqual(gapIndices(ends, starts, 0.05), [1, 2]);
});

test("a jump in time over records the page skipped is no gap: steps ran there", () => {
  const ends = [0.01, 0.02, 5.01, 5.02];
  const starts = [0, 0.01, 5, 5.01];
  assert.deepEqual(gapIndices(ends, starts, 0.25, [0, 1, 2, 3]), [2]); // idle: the next record
  assert.deepEqual(gapIndices(ends, starts, 0.25, [0, 1, 400, 401]), []); // a seek skipped 398
  const [x] = withGaps(ends, starts, [[1, 2, 3, 4]], [0, 1, 400, 401]);
  assert.equal(x, ends);
});
