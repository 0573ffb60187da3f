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
