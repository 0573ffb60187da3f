import assert from "node:assert/strict";
import test from "node:test";

import { caption } from "../../frontend/static/js/state/caption.js";
import { applyKeyframe } from "../../frontend/static/js/state/keyframe.js";
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

const V1 = (extra = {}) => ({ policy: "vllm-v1", enable_prefix_caching: true, ...extra });

test("a preemption says what its resume takes from the prefix cache and recomputes", () => {
  const run = createRun({ ...INIT, config: V1() });
  for (const r of RECORDS) applyRecord(run, r);
  // b: 6 prompt and 3 sampled tokens; 8 computed, in 2 full blocks of 4 that stay cached
  assert.equal(caption(run, RECORDS[4]), "Step 4: b is preempted (no free KV block for the " +
    "running batch): it gives back its 2 blocks, and its resume will take 8 tokens from the prefix " +
    "cache (its 2 full blocks, if none is evicted first) and recompute 1, chunked under the 8-token " +
    "budget; nothing is scheduled this step.");
});

test("without prefix caching the resume recomputes everything; V0 in one prefill", () => {
  for (const [config, how] of [[V1({ enable_prefix_caching: false }), "chunked under the 8-token budget"],
    [{ policy: "vllm-v0", enable_prefix_caching: false }, "in one prefill"]]) {
    const run = createRun({ ...INIT, config });
    for (const r of RECORDS) applyRecord(run, r);
    assert.match(caption(run, RECORDS[4]),
      new RegExp(`its resume will recompute all 9 tokens \\(prompt and output so far\\), ${how};`));
  }
});

test("a record reached through a keyframe leaves out what the keyframe does not hold", () => {
  const run = createRun({ ...INIT, config: V1() });
  applyKeyframe(run, { step: 4, requests: { b: { status: "preempted", num_output_tokens: 3 } },
    tables: {}, running: [], waiting: ["b"], record: RECORDS[4] });
  assert.match(caption(run, RECORDS[4]), /b is preempted \(.*\): it gives back its blocks, and its resume will take what the prefix cache still holds of it and recompute the rest/);
});

test("async scheduling: a victim whose last token is in flight gives back its table and never resumes", () => {
  // b (6 prompt, 4 out) samples its 4th token in step 4, whose update (after step 5 was
  // scheduled) finishes and releases it; step 5's schedule preempted it meanwhile: its 2 blocks
  // (block 1 shared with a) go back then, as vLLM's Scheduler._preempt_request frees them
  const run = createRun({ ...INIT, config: V1({ async_scheduling: true }) });
  const steps = [...RECORDS.slice(0, 3),
    rec({ step: 3, iter: 3, scheduled: [entry("a", 1, 11), entry("b", 1, 7)], running: ["a", "b"] }),
    rec({ step: 4, iter: 4, scheduled: [entry("a", 1, 12), entry("b", 1, 8)], running: ["a", "b"],
      finished: ["b"], released: ["b"] }),
    rec({ step: 5, iter: 5, preempted: ["b"], scheduled: [entry("a", 1, 13)], new_blocks: { a: [5] },
      running: ["a"], waiting: ["b"], freed_blocks: [4] })];
  for (const r of steps) applyRecord(run, r);
  assert.match(caption(run, steps[5]), /^Step 5: b is preempted \(no free KV block for the running batch\) while its last token is in flight: it gives back its 2 blocks, and that token finishes it, so it never resumes; /);
  const seek = createRun({ ...INIT, config: V1({ async_scheduling: true }) });
  applyKeyframe(seek, { step: 5, requests: { b: { status: "finished", num_output_tokens: 4 } },
    tables: { a: [1, 2, 3, 5] }, running: ["a"], waiting: [], record: steps[5] });
  assert.match(caption(seek, steps[5]), /b is preempted \(.*\) while its last token is in flight: it gives back its blocks, and that token finishes it/);
});

test("a resume says what came from the cache and what is recomputed", () => {
  const run = createRun({ ...INIT, config: V1() });
  for (const r of RECORDS) applyRecord(run, r);
  const resume = rec({ step: 5, iter: 5, resumed: ["b"], num_cached_tokens: { b: 8 },
    scheduled: [entry("b", 1, 8, "prefill")], new_blocks: { b: [4, 1, 5] }, running: ["b"] });
  applyRecord(run, resume);
  assert.match(caption(run, resume), /b resumes after its preemption: it takes 8 of its 9 tokens from the prefix cache and recomputes 1 this step/);
});

test("naive serving: the head waits for the one request running, not for blocks", () => {
  const run = createRun({ ...INIT, config: { policy: "naive" } });
  const r = rec({ scheduled: [entry("a", 1, 10)], running: ["a"], waiting: ["b"], num_free_blocks: 12 });
  applyRecord(run, r);
  assert.match(caption(run, r), /b waits: naive serving runs one request at a time, and this step is a's\.$/);
});

test("static batching: the head waits for the next batch; the W step names the waste", () => {
  const run = createRun({ ...INIT, config: { policy: "static", static_batch_size: 8 } });
  const steps = [
    rec({ step: 0, iter: 0, new: ["a"], scheduled: [entry("a", 10, 0)], new_blocks: { a: [1, 2, 3, 4] },
      running: ["a"], waiting: ["b"] }),
    rec({ step: 1, iter: 1, scheduled: [entry("a", 1, 10)], running: ["a"], waiting: ["b"], finished: ["a"], released: [] }),
    rec({ step: 2, iter: 2, scheduled: [entry("a", 1, 11, "decode", false)], running: ["a"], waiting: ["b"] }),
  ];
  for (const r of steps) applyRecord(run, r);
  assert.match(caption(run, steps[2]), /0 requests decode one token each and 1 finished one decodes padding; b waits for the next batch: static batching lets no one join until all 1 request of this batch are done \(1 of them has finished and holds its blocks idle\)/);
  const end = rec({ step: 3, iter: 3, scheduled: [entry("a", 1, 12, "decode", false), entry("c", 1, 5)],
    running: ["a", "c"], waiting: ["b"], finished: ["c"], released: ["a", "c"], freed_blocks: [4, 3, 2, 1] });
  applyRecord(run, end);
  assert.match(caption(run, end), /the batch ends: a had finished up to 2 steps earlier but held its 4 blocks, decoding padding, until c finished\.$/);
});

test("vLLM V1: a KV wait counts the blocks the whole prompt needs against the free ones", () => {
  const run = createRun({ ...INIT, config: V1({ enable_prefix_caching: false }) });
  // a holds 12 of the 15 usable blocks; b's 6-token prompt needs 2, 1 is free after the
  // schedule (the update freed nothing)
  const r = rec({ scheduled: [entry("a", 1, 10)], running: ["a"], waiting: ["b"], num_free_blocks: 1,
    token_budget: 16 });
  applyRecord(run, r);
  assert.match(caption(run, r), /b waits at the head of the queue: its whole prompt, 6 tokens, needs 2 KV blocks and only 1 is free\.$/);
});

test("a head-of-line wait names its reason", () => {
  const run = createRun(INIT);
  const r = rec({
    scheduled: [entry("a", 1, 10)], running: ["a"], waiting: ["b"], max_num_seqs: 1,
  });
  assert.match(caption(run, r), /b waits: max_num_seqs \(1\)/);
  assert.equal(caption(run, null), "Press play to start the run.");
});
