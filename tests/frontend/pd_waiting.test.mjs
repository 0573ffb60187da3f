// P/D on a decode replica's own view: a request admitted with its blocks while its remote KV is
// in flight (vLLM's WAITING_FOR_REMOTE_KVS: a record's waiting_for_kv) is its own state in the
// timeline's spans and the queues' lanes, and is waiting again once its KV has arrived.
import assert from "node:assert/strict";
import test from "node:test";

import { appendRecord, createHistory } from "../../frontend/static/js/state/history.js";
import { applyRecord, createRun } from "../../frontend/static/js/state/reduce.js";
import { lanes } from "../../frontend/static/js/state/select.js";
import { entry, init, rec } from "./helpers.mjs";

// a: admitted at step 0 with its 3 blocks, its KV arriving during step 1 (kv_arrived), then
// its last prompt token computed and its first token sampled in step 2
const RECORDS = [
  rec({ step: 0, iter: 0, time_s: 0, arrivals: ["a", "b"], new: ["a", "b"], new_blocks: { a: [1, 2, 3], b: [4, 5] },
    scheduled: [entry("b", 6, 0, "prefill")], running: ["b"], waiting: ["a"], waiting_for_kv: ["a"] }),
  rec({ step: 1, iter: 1, time_s: 0.01, scheduled: [entry("b", 1, 6)], running: ["b"], waiting: ["a"],
    kv_arrived: ["a"] }),
  rec({ step: 2, iter: 2, time_s: 0.02, scheduled: [entry("a", 1, 9, "prefill"), entry("b", 1, 7)],
    running: ["a", "b"] }),
];

function play(records) {
  const run = createRun(init());
  const h = createHistory();
  const seen = [];
  for (const r of records) {
    applyRecord(run, r);
    appendRecord(h, r, run);
    seen.push(lanes(run));
  }
  return { run, h, seen };
}

test("a request waiting for its remote KV is a span of its own, then a plain wait", () => {
  const { h } = play(RECORDS);
  const kinds = h.spans.get("a").map((s) => s.kind);
  assert.deepEqual(kinds, ["waiting_for_kv", "waiting", "prefill"]);
});

test("the queues mark it in the waiting lane while its KV is in flight, and only then", () => {
  const { seen } = play(RECORDS);
  assert.deepEqual(seen[0].waiting, ["a"]);
  assert.deepEqual([...seen[0].waiting_for_kv], ["a"]);
  assert.deepEqual([...seen[1].waiting_for_kv], []);
});

test("a record without the field (one engine, no P/D) marks nothing", () => {
  const { seen, h } = play([rec({ arrivals: ["a"], waiting: ["a"] })]);
  assert.equal(seen[0].waiting_for_kv.size, 0);
  assert.deepEqual(h.spans.get("a").map((s) => s.kind), ["waiting"]);
});

// A decode replica idle while KV is in flight: a admitted at 1 s and b at 1.05 s in steps of no
// time (docs/pd.md, rule D1'), a's KV in at 2 s, b's at 3 s, a decoding in between
const IDLE = [
  rec({ iter: 0, time_s: 1, step_time_ms: 0, arrivals: ["a"], new: ["a"], waiting: ["a"], waiting_for_kv: ["a"] }),
  rec({ iter: 1, time_s: 1.05, step_time_ms: 0, arrivals: ["b"], new: ["b"], waiting: ["a", "b"],
    waiting_for_kv: ["a", "b"] }),
  rec({ iter: 2, time_s: 2, scheduled: [entry("a", 1, 9, "prefill")], running: ["a"], waiting: ["b"],
    waiting_for_kv: ["b"], kv_arrived: ["a"] }),
  rec({ iter: 3, time_s: 2.01, scheduled: [entry("a", 1, 10)], running: ["a"], finished: ["a"], waiting: ["b"],
    waiting_for_kv: ["b"] }),
  rec({ iter: 4, time_s: 3, scheduled: [entry("b", 1, 9, "prefill")], running: ["b"], kv_arrived: ["b"] }),
];

function spansOf(h, id) {
  return h.spans.get(id).map((s) => [s.kind, s.t0_s, +s.t1_s.toFixed(9)]);
}

test("a wait for remote KV lasts from the admission to the step its KV arrives in, idle time too", () => {
  const { h } = play(IDLE);
  assert.deepEqual(spansOf(h, "a"), [["waiting_for_kv", 1, 2], ["prefill", 2, 2.01], ["decode", 2.01, 2.02]]);
  assert.deepEqual(spansOf(h, "b"), [["waiting_for_kv", 1.05, 3], ["prefill", 3, 3.01]]);
});

test("until the next record comes, a held wait is drawn as long as its own step", () => {
  const { h } = play(IDLE.slice(0, 4));
  assert.deepEqual(spansOf(h, "b"), [["waiting_for_kv", 1.05, 2.02]]);
});

test("a plain wait is not held over idle time (an idle engine admits what waits)", () => {
  const { h } = play([rec({ iter: 0, arrivals: ["a"], waiting: ["a"] }),
    rec({ iter: 1, time_s: 1, scheduled: [entry("a", 10, 0)], running: ["a"] })]);
  assert.deepEqual(spansOf(h, "a"), [["waiting", 0, 0.01], ["prefill", 1, 1.01]]);
});

test("a record that is not the next one (after a seek ahead) does not stretch the hold", () => {
  const { h } = play([IDLE[0], IDLE[1], { ...IDLE[4], iter: 7 }]);
  assert.deepEqual(spansOf(h, "b"), [["prefill", 3, 3.01]]);
  assert.deepEqual(spansOf(h, "a"), [["waiting_for_kv", 1, 1.05]]);
});
