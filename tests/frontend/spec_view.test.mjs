// The spec-decode view's state and drawing rules on hand-made speculating records: drafts
// inside `n` (a decode is n = 1 + drafts), a verify's accepted drafts plus one token out, the
// rejected drafts rolled back (vllm/v1/core/sched/scheduler.py, update_from_output), the blocks
// holding draft slots marked reserved or released, and the acceptance columns the chart plots.
import assert from "node:assert/strict";
import test from "node:test";

import { ROLE, tokenRole } from "../../frontend/static/js/render/batch.js";
import { CHART_SPECS } from "../../frontend/static/js/render/charts.js";
import { appendRecord, COLUMNS, createHistory, stepAcceptance } from "../../frontend/static/js/state/history.js";
import { LOOKAHEAD, applyRecord, createRun } from "../../frontend/static/js/state/reduce.js";
import { batchView, draftsCaption } from "../../frontend/static/js/state/select.js";
import { init, rec } from "./helpers.mjs";

const spec = (id, n, start, drafts, accepted, kind = drafts ? "decode" : "prefill") =>
  ({ id, n, start, kind, sampled: true, drafts, accepted });

// a: 10-token prompt, blocks of 4; K = 3
const RECORDS = [
  rec({ iter: 0, step: 0, arrivals: ["a"], new: ["a"], running: ["a"],
    scheduled: [spec("a", 10, 0, 0, 0)], new_blocks: { a: [1, 2, 3] } }),
  // num_tokens 11, computed 10: the token and 3 drafts at positions 10..13; block 4 holds 12-15
  rec({ iter: 1, step: 1, time_s: 0.01, running: ["a"],
    scheduled: [spec("a", 4, 10, 3, 1)], new_blocks: { a: [4] } }),
  rec({ iter: 2, step: 2, time_s: 0.02, running: ["a"], scheduled: [spec("a", 4, 12, 3, -1)] }),
];

function runTo(n) {
  const run = createRun(init({ requests: [{ id: "a", prompt_len: 10, output_len: 9, arrival_s: 0 }] }));
  const history = createHistory();
  for (const r of RECORDS.slice(0, n)) {
    applyRecord(run, r);
    appendRecord(history, r, run);
  }
  return { run, history };
}

test("a verify yields its accepted drafts plus one token and rolls the rejected back", () => {
  const { run } = runTo(2);
  const a = run.reqs[run.index.get("a")];
  assert.equal(a.num_output_tokens, 1 + (1 + 1)); // prefill's token, then 1 accepted + 1
  assert.equal(a.num_computed_tokens, 10 + 4 - (3 - 1)); // 2 rejected drafts rolled back
  assert.deepEqual([run.fill[3], run.fill[4]], [4, 0]); // kept slots 8..11; block 4 none
});

test("blocks holding draft slots are reserved, and released where every one was rejected", () => {
  const { run } = runTo(2);
  // draft slots 11, 12, 13; slot 11 (block 3) accepted, 12 and 13 (block 4) rejected
  assert.equal(run.lookahead[3], LOOKAHEAD.reserved);
  assert.equal(run.lookahead[4], LOOKAHEAD.released);
  assert.equal(run.lookahead[2], LOOKAHEAD.none);
  const next = runTo(3).run; // each record shows its own: an output not applied keeps none
  assert.equal(next.lookahead[4], LOOKAHEAD.reserved);
  assert.equal(next.reqs[0].num_output_tokens, 3);
});

test("the batch bar draws the drafts at a decode's end by their outcome", () => {
  const seg = { offset: 10, n: 4, drafts: 3, accepted: 1 };
  assert.deepEqual([10.5, 11.5, 12.5, 13.5].map((t) => tokenRole(seg, t)),
    [ROLE.none, ROLE.accepted, ROLE.rejected, ROLE.rejected]);
  assert.equal(tokenRole({ ...seg, accepted: -1 }, 12.5), ROLE.pending);
  assert.equal(tokenRole({ offset: 0, n: 8 }, 7.5), ROLE.none); // no drafts: as before
  const { run } = runTo(2);
  const view = batchView(run);
  assert.deepEqual(view.segments.map((s) => [s.drafts, s.accepted]), [[3, 1]]);
  assert.equal(draftsCaption(view), " · 3 drafts, 1 accepted");
  run.record = rec({ scheduled: [{ id: "a", n: 1, start: 11, kind: "decode", sampled: true }] });
  assert.equal(draftsCaption(batchView(run)), "");
});

test("the acceptance chart plots each step's acceptance rate and mean acceptance length", () => {
  const { history } = runTo(3);
  assert.deepEqual(history.cols.acceptance_rate, [null, 1 / 3, null]);
  assert.deepEqual(history.cols.mean_acceptance_length, [null, 2, null]);
  // two verifies: accepted 2 of 3 and 0 of 2 -> 2 / 5, 1 + 2 / 2
  assert.deepEqual(stepAcceptance({ scheduled: [spec("a", 4, 0, 3, 2), spec("b", 3, 0, 2, 0)] }),
    { acceptance_rate: 2 / 5, mean_acceptance_length: 2 });
  const k = CHART_SPECS.findIndex((s) => s.key === "acceptance");
  assert.equal(CHART_SPECS[k - 1].key, "throughput");
  assert.ok(CHART_SPECS[k].speculative);
  for (const [col] of CHART_SPECS[k].series) assert.ok(COLUMNS.includes(col));
});

test("the batch line says where the acceptances come from", () => {
  const { run } = runTo(2);
  assert.equal(draftsCaption(batchView(run), "recorded spec_accepted"),
    " · 3 drafts, 1 accepted (acceptance: recorded spec_accepted)");
  assert.match(draftsCaption(batchView(run), "none"), /acceptance: none, every draft rejected/);
});
