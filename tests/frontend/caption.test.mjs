import assert from "node:assert/strict";
import test from "node:test";

import { caption } from "../../frontend/static/js/state/caption.js";
import { applyRecord, createRun } from "../../frontend/static/js/state/reduce.js";
import { entry, rec } from "./helpers.mjs";
import { INIT, RECORDS } from "./scenario.mjs";

test("a prefill chunk beside decodes, in the lesson's words", () => {
  const requests = [{ id: "r7", prompt_len: 4000 }];
  const scheduled = [];
  for (let i = 0; i < 16; i++) {
    requests.push({ id: `d${i}`, prompt_len: 10 });
    scheduled.push(entry(`d${i}`, 1, 20));
  }
  scheduled.push(entry("r7", 496, 512, "prefill", false));
  const run = createRun({ num_gpu_blocks: 64, block_size: 16, requests });
  const r = rec({ step: 12, scheduled, running: scheduled.map((e) => e.id), token_budget: 512 });
  assert.equal(caption(run, r), "Step 12: r7's 496-token prefill chunk shares this step with 16 decodes.");
});

test("a prefix-cache hit is told in tokens and blocks", () => {
  const run = createRun(INIT);
  applyRecord(run, RECORDS[0]);
  applyRecord(run, RECORDS[1]);
  assert.match(caption(run, RECORDS[1]), /b reuses 4 cached prompt tokens \(1 block\)/);
  assert.match(caption(run, RECORDS[1]), /a's last 2-token prefill chunk and b's last 2-token prefill chunk fill the step/);
});

test("a finish reports the freed blocks", () => {
  const run = createRun(INIT);
  for (const r of RECORDS.slice(0, 4)) applyRecord(run, r);
  assert.match(caption(run, RECORDS[3]), /2 requests decode one token each; a finishes, freeing 2 blocks/);
});

test("a preemption says what the victim loses", () => {
  const run = createRun(INIT);
  for (const r of RECORDS) applyRecord(run, r);
  // b: 6 prompt tokens and 3 sampled tokens to recompute
  assert.match(caption(run, RECORDS[4]), /^Step 4: b is preempted: .* recompute 9 tokens/);
});

test("a head-of-line wait names its reason", () => {
  const run = createRun(INIT);
  const r = rec({
    scheduled: [entry("a", 1, 10)], running: ["a"], waiting: ["b"], max_num_seqs: 1,
  });
  assert.match(caption(run, r), /b waits: max_num_seqs \(1\)/);
  assert.equal(caption(run, null), "Press play to start the run.");
});
