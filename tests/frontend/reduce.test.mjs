import assert from "node:assert/strict";
import test from "node:test";

import {
  NO_OWNER, applyRecord, createRun, drainChanged, requestIndex,
} from "../../frontend/static/js/state/reduce.js";
import { INIT, RECORDS } from "./scenario.mjs";
import { entry, init, rec } from "./helpers.mjs";

function runTo(n) {
  const run = createRun(INIT);
  for (const r of RECORDS.slice(0, n)) applyRecord(run, r);
  return run;
}

test("request indices follow the workload order and are stable", () => {
  const run = createRun(INIT);
  assert.equal(requestIndex(run, "a"), 0);
  assert.equal(requestIndex(run, "b"), 1);
  assert.equal(requestIndex(run, "late"), 2);
  assert.equal(requestIndex(run, "a"), 0);
});

test("a first chunk owns its blocks and fills them up to the computed tokens", () => {
  const run = runTo(1);
  assert.equal(run.owner[1], 0);
  assert.equal(run.owner[2], 0);
  assert.equal(run.owner[3], NO_OWNER);
  assert.deepEqual([run.fill[1], run.fill[2]], [4, 4]);
  assert.deepEqual([run.cached[1], run.cached[2]], [1, 1]);
  assert.deepEqual(run.tables.get("a"), [1, 2]);
  assert.deepEqual(run.waiting, ["b"]);
});

test("a prefix hit shares the physical block: ref count two, owner unchanged", () => {
  const run = runTo(2);
  assert.equal(run.ref[1], 2);
  assert.equal(run.owner[1], 0);
  assert.equal(run.owner[4], 1);
  assert.deepEqual(run.tables.get("b"), [1, 4]);
  assert.equal(run.fill[3], 2); // a: 10 tokens -> blocks of 4, 4, 2
  assert.equal(run.fill[4], 2); // b: 6 tokens, 4 of them cached in block 1
  assert.equal(run.reqs[1].num_cached_tokens, 4);
});

test("decode tokens fill the last block one by one", () => {
  const run = runTo(3);
  assert.equal(run.fill[3], 3);
  assert.equal(run.fill[4], 3);
  assert.equal(run.reqs[0].num_output_tokens, 2);
});

test("a finished request frees its own blocks; a shared block passes to the sharer", () => {
  const run = runTo(4);
  assert.equal(run.tables.has("a"), false);
  assert.equal(run.ref[1], 1);
  assert.equal(run.owner[1], 1);
  assert.equal(run.ref[2], 0);
  assert.equal(run.owner[2], NO_OWNER);
  assert.equal(run.owner[3], NO_OWNER);
  assert.equal(run.fill[3], 0); // not cached: a freed partial block holds nothing
  assert.equal(run.fill[2], 4); // cached: the free block keeps its tokens for later hits
  assert.equal(run.lastOwner[2], 0);
  assert.deepEqual(run.running, ["b"]);
  assert.equal(run.reqs[0].status, "finished");
});

test("preemption drops the table and resets the request's computed tokens", () => {
  const run = runTo(5);
  assert.equal(run.tables.size, 0);
  for (let b = 0; b < 16; b++) assert.equal(run.ref[b], 0, `block ${b}`);
  assert.equal(run.reqs[1].status, "preempted");
  assert.equal(run.reqs[1].num_computed_tokens, 0);
  assert.equal(run.reqs[1].num_preemptions, 1);
  assert.equal(run.cursor, 4);
});

test("changed blocks are reported once and then cleared", () => {
  const run = runTo(1);
  assert.deepEqual(drainChanged(run).sort(), [1, 2]);
  assert.deepEqual(drainChanged(run), []);
});

test("an eviction clears the cached mark of a free block", () => {
  const run = runTo(4);
  applyRecord(run, {
    ...RECORDS[4], step: 5, iter: 5, preempted: [], new_blocks: { b: [2] },
    kv_events: [{ type: "BlockRemoved", block_ids: [2], req: null }], freed_blocks: [],
    running: ["b"], waiting: [],
  });
  assert.equal(run.cached[2], 0);
  assert.equal(run.owner[2], 1);
});

test("hostile ids are kept verbatim as data", () => {
  const evil = "<img src=x onerror=alert(1)>";
  const run = createRun({ num_gpu_blocks: 4, block_size: 4, requests: [{ id: evil }] });
  assert.equal(run.ids[0], evil);
  assert.equal(run.index.get(evil), 0);
});

test("a block freed and allocated again within one step stays with its new table", () => {
  // The static policy tries admissions: blocks 1-2 go to "a", back to the pool, then to "a"
  // for real; the record lists them in both new_blocks and freed_blocks.
  const run = createRun({ num_gpu_blocks: 4, block_size: 4, requests: [{ id: "a" }] });
  applyRecord(run, {
    step: 0, iter: 0, time_s: 0, step_time_ms: 10, arrivals: ["a"],
    scheduled: [{ id: "a", n: 8, start: 0, sampled: true, kind: "prefill" }],
    new: ["a"], resumed: [], preempted: [], finished: [], released: [], rejected: [],
    new_blocks: { a: [1, 2] }, freed_blocks: [1, 2, 3], kv_events: [], num_cached_tokens: {},
    running: ["a"], waiting: [], num_free_blocks: 1, num_usable_blocks: 3, token_budget: 8,
    max_num_seqs: 4,
  });
  assert.deepEqual([run.owner[1], run.owner[2], run.owner[3]], [0, 0, NO_OWNER]);
  assert.deepEqual([run.ref[1], run.ref[2]], [1, 1]);
  assert.deepEqual(run.tables.get("a"), [1, 2]);
});

test("async scheduling: a request finished in the last update is not running in the next step", () => {
  const run = createRun(init());
  applyRecord(run, rec({
    step: 0, arrivals: ["a", "b"], scheduled: [entry("a", 10, 0), entry("b", 6, 0)], new: ["a", "b"],
    new_blocks: { a: [1, 2, 3], b: [4, 5] }, running: ["a", "b"], num_free_blocks: 10,
  }));
  // b's second (last) token is sampled in step 1; step 2 was scheduled before that update, with
  // b still running; a needed a block then and preempted b, whose last token still arrived.
  applyRecord(run, rec({
    step: 1, scheduled: [entry("a", 1, 10), entry("b", 1, 6)], finished: ["b"], released: ["b"],
    new_blocks: {}, freed_blocks: [], running: ["a", "b"], num_free_blocks: 10,
  }));
  assert.equal(run.reqs[requestIndex(run, "b")].status, "finished");
  applyRecord(run, rec({
    step: 2, scheduled: [entry("a", 1, 11)], preempted: ["b"], freed_blocks: [5, 4],
    running: ["a"], waiting: ["b"], num_free_blocks: 12,
  }));
  const b = run.reqs[requestIndex(run, "b")];
  assert.deepEqual([b.status, b.num_computed_tokens, b.num_preemptions], ["finished", 7, 1]);
  assert.deepEqual([run.running, run.waiting], [["a"], []]);
  applyRecord(run, rec({ step: 3, scheduled: [entry("a", 1, 12)], running: ["a", "b"] }));
  assert.deepEqual(run.running, ["a"]);
});

test("a request admitted in its arrival step is running, one left in the queue is waiting", () => {
  const run = createRun(init());
  applyRecord(run, rec({ arrivals: ["a", "b"], scheduled: [entry("a", 10, 0)], new: ["a"],
    new_blocks: { a: [1, 2, 3] }, running: ["a"], waiting: ["b"] }));
  const status = (id) => run.reqs[run.index.get(id)].status;
  assert.equal(status("a"), "running");
  assert.equal(status("b"), "waiting");
});
