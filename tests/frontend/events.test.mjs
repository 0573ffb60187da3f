import { test } from "node:test";
import assert from "node:assert/strict";
import { eventKinds, kindForKey, nextEvent } from "../../frontend/static/js/state/events.js";

const base = { scheduled: [], preempted: [], finished: [], released: [], waiting: [], new: [],
  num_cached_tokens: {}, token_budget: 8 };
const prompts = { a: 100, b: 10 };
const kinds = (fields) => eventKinds({ ...base, ...fields }, (id) => prompts[id]);

test("each kind is found in the record that shows it, and only there", () => {
  assert.deepEqual(kinds({}), []);
  assert.deepEqual(kinds({ preempted: ["a"] }), ["preemption"]);
  assert.deepEqual(kinds({ num_cached_tokens: { a: 0, b: 16 } }), ["prefix_cache_hit"]);
  assert.deepEqual(kinds({ scheduled: [{ id: "a", n: 8, start: 0, kind: "prefill" }] }),
    ["chunked_prefill"]);
  assert.deepEqual(kinds({ scheduled: [{ id: "b", n: 10, start: 0, kind: "prefill" }] }), []); // whole prompt
  assert.deepEqual(kinds({ finished: ["b"], released: ["b"] }), ["finished"]);
  assert.deepEqual(kinds({ finished: ["b"], released: ["b", "a"] }), ["finished", "static_waste"]);
  assert.deepEqual(kinds({ waiting: ["c"], scheduled: [{ id: "b", n: 8, start: 2, kind: "decode" }] }),
    ["budget_blocked"]);
  assert.deepEqual(kinds({ waiting: ["c"], new: ["d"], scheduled: [{ id: "d", n: 8, start: 0, kind: "decode" }] }), []);
});

test("next event of a kind after a record, and keys per kind", () => {
  const events = [{ iter: 2, kind: "finished" }, { iter: 5, kind: "preemption" }, { iter: 9, kind: "finished" }];
  assert.equal(nextEvent(events, "finished", 2).iter, 9);
  assert.equal(nextEvent(events, "preemption", -1).iter, 5);
  assert.equal(nextEvent(events, "preemption", 5), null);
  assert.equal(kindForKey("r"), "preemption");
  assert.equal(kindForKey("z"), null);
});
