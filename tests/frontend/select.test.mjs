import assert from "node:assert/strict";
import test from "node:test";

import { appendRecord, createHistory } from "../../frontend/static/js/state/history.js";
import { applyRecord, createRun } from "../../frontend/static/js/state/reduce.js";
import {
  batchView, blockInfo, blockTable, historyIndexAt, historyIndexOfIter, lanes, lessonRow, pastBatches, requestInfo,
} from "../../frontend/static/js/state/select.js";
import { INIT, RECORDS } from "./scenario.mjs";

function build(n) {
  const run = createRun(INIT);
  const h = createHistory();
  for (const r of RECORDS.slice(0, n)) {
    applyRecord(run, r);
    appendRecord(h, r, run);
  }
  return { run, h };
}

test("the batch view lays segments end to end against the budget", () => {
  const { run } = build(2);
  const v = batchView(run);
  assert.deepEqual(v.segments.map((s) => [s.id, s.n, s.offset, s.kind]),
    [["a", 2, 0, "prefill"], ["b", 2, 2, "prefill"]]);
  assert.equal(v.used, 4);
  assert.equal(v.budget, 8);
  assert.equal(v.max_num_seqs, 4);
  assert.equal(v.num_prefill_tokens, 4);
  assert.equal(v.num_decode_tokens, 0);
});

test("an empty run has an empty batch", () => {
  assert.equal(batchView(createRun(INIT)).segments.length, 0);
});

test("lanes split preempted requests out of the waiting queue", () => {
  const none = new Set(); // no record waits for remote KV (P/D only: pd_waiting.test.mjs)
  assert.deepEqual(lanes(build(1).run), { waiting: ["b"], running: ["a"], preempted: [], waiting_for_kv: none });
  assert.deepEqual(lanes(build(5).run), { waiting: [], running: [], preempted: ["b"], waiting_for_kv: none });
});

test("a block table maps logical to physical blocks with fills and ref counts", () => {
  const { run } = build(2);
  assert.deepEqual(blockTable(run, "b"), [
    { logical: 0, block: 1, fill: 4, ref: 2, cached: true },
    { logical: 1, block: 4, fill: 2, ref: 1, cached: false },
  ]);
  assert.equal(blockTable(run, "nobody"), null);
});

test("block info names the owner and the null block", () => {
  const { run } = build(2);
  assert.equal(blockInfo(run, 0).is_null, true);
  assert.equal(blockInfo(run, 1).owner, "a");
  assert.equal(blockInfo(run, 1).ref_count, 2);
  assert.equal(blockInfo(run, 99), null);
  assert.equal(requestInfo(run, "b").num_blocks, 2);
});

test("history index at a step that was skipped falls back to the one before", () => {
  const { h } = build(5);
  assert.equal(historyIndexAt(h, 3), 3);
  h.cols.step[4] = 9;
  h.stepToIter.delete(4);
  assert.equal(historyIndexAt(h, 7), 3);
  assert.equal(historyIndexAt(h, -1), -1);
});

test("a record's place in the history is found by its index, and none for one skipped", () => {
  const h = createHistory();
  for (const [k, rec] of RECORDS.slice(0, 5).entries()) {
    appendRecord(h, { ...rec, iter: k < 2 ? k : 5000 + k, step: k < 2 ? k : 5000 + k });
  }
  assert.deepEqual(h.cols.iter, [0, 1, 5002, 5003, 5004]); // a leap after the first two
  assert.equal(historyIndexOfIter(h, 0), 0);
  assert.equal(historyIndexOfIter(h, 5003), 3);
  assert.equal(historyIndexOfIter(h, 5004), 4);
  assert.equal(historyIndexOfIter(h, 2), -1);
  assert.equal(historyIndexOfIter(h, 9999), -1);
});

test("the lesson row follows the cursor, not the newest record", () => {
  const { run, h } = build(5);
  run.cursor = 1;
  assert.ok(Math.abs(lessonRow(run, h).output_throughput - 100) < 1e-6);
  assert.ok(Number.isNaN(lessonRow(createRun(INIT), createHistory()).mean_ttft_ms));
});

test("past batches end at the cursor", () => {
  const { run, h } = build(5);
  run.cursor = 2;
  const past = pastBatches(run, h, 2);
  assert.deepEqual(past.map((p) => p.step), [1, 2]);
  assert.equal(past[1].scheduled.length, 2);
});
