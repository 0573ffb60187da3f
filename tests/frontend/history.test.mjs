import assert from "node:assert/strict";
import test from "node:test";

import { appendRecord, createHistory } from "../../frontend/static/js/state/history.js";
import { applyRecord, createRun } from "../../frontend/static/js/state/reduce.js";
import { entry, rec } from "./helpers.mjs";
import { INIT, RECORDS } from "./scenario.mjs";

function build(records = RECORDS) {
  const run = createRun(INIT);
  const h = createHistory();
  for (const r of records) {
    applyRecord(run, r);
    appendRecord(h, r, run);
  }
  return { run, h };
}

test("one metrics row per record, time at the end of each step", () => {
  const { h } = build();
  assert.equal(h.length, 5);
  assert.deepEqual(h.cols.step, [0, 1, 2, 3, 4]);
  assert.deepEqual(h.cols.t_s.map((t) => +t.toFixed(6)), [0.01, 0.02, 0.04, 0.05, 0.06]);
  assert.deepEqual(h.cols.num_scheduled_tokens, [8, 4, 2, 2, 0]);
});

test("TTFT is first sampled token minus arrival; ITL the gap between tokens", () => {
  const { h } = build();
  // a and b both sample their first token at the end of step 1 (0.02 s), arrived at 0.
  assert.ok(Math.abs(h.cols.ttft_p50_ms[1] - 20) < 1e-9);
  assert.equal(h.cols.ttft_p50_ms[0], null);
  // step 2 ends at 0.04 s: both requests' ITL is 20 ms; step 3 ends at 0.05: 10 ms.
  assert.ok(Math.abs(h.cols.itl_p50_ms[2] - 20) < 1e-9);
  assert.ok(Math.abs(h.cols.itl_p50_ms[3] - 10) < 1e-9);
  assert.ok(Math.abs(h.cols.itl_p99_ms[3] - 20) < 1e-9);
  assert.ok(Math.abs(h.cols.mean_ttft_ms[4] - 20) < 1e-9);
});

test("rolling output rate counts sampled tokens over the window's simulated time", () => {
  const { h } = build();
  assert.equal(h.cols.output_tokens_per_s[0], 0); // the first chunk samples nothing
  // steps 0-1: 2 tokens over 0.02 s
  assert.ok(Math.abs(h.cols.output_tokens_per_s[1] - 100) < 1e-6);
  // steps 0-3: 6 tokens over 0.05 s
  assert.ok(Math.abs(h.cols.output_tokens_per_s[3] - 120) < 1e-6);
  assert.ok(Math.abs(h.cols.throughput_tok_per_s[3] - 120) < 1e-6);
});

test("lanes: running, waiting and preempted counts", () => {
  const { h } = build();
  assert.deepEqual(h.cols.num_running, [1, 2, 2, 1, 0]);
  assert.deepEqual(h.cols.num_waiting, [1, 0, 0, 0, 0]);
  assert.deepEqual(h.cols.num_preempted, [0, 0, 0, 0, 1]);
  assert.deepEqual(h.cols.num_preemptions_total, [0, 0, 0, 0, 1]);
});

test("timeline spans: waiting, two prefill chunks, decoding, preempted", () => {
  const { h } = build();
  const a = h.spans.get("a").map((s) => [s.kind, s.i0, s.i1, s.n]);
  assert.deepEqual(a, [["prefill", 0, 0, 8], ["prefill", 1, 1, 2], ["decode", 2, 3, 2]]);
  const b = h.spans.get("b").map((s) => [s.kind, s.i0, s.i1]);
  assert.deepEqual(b, [["waiting", 0, 0], ["prefill", 1, 1], ["decode", 2, 3], ["preempted", 4, 4]]);
});

test("records replayed after a seek back do not grow the history", () => {
  const { h } = build();
  assert.equal(appendRecord(h, RECORDS[2]), false);
  assert.equal(h.length, 5);
  assert.equal(h.cols.step.length, 5);
});

test("batches of past steps are kept by step", () => {
  const { h } = build();
  assert.deepEqual(h.batches.get(1).map(({ id, n, kind }) => ({ id, n, kind })), [
    { id: "a", n: 2, kind: "prefill" }, { id: "b", n: 2, kind: "prefill" },
  ]);
});

test("KV waste is the time-weighted share of slots that hold no token state", () => {
  const recs = RECORDS.map((r, i) => ({
    ...r, kv_waste: i < 2 ? { token_states: 3, internal_fragmentation: 1 } : { token_states: 1 },
  }));
  const { h } = build(recs);
  // waste slot-ms 1*10 + 1*10 = 20 over slot-ms 4*10 + 4*10 + 1*20 = 100: 20%
  assert.ok(Math.abs(h.cols.kv_waste_pct[2] - (100 * 20) / 100) < 1e-9);
});

test("an anonymous batch slot's tokens count towards the rate but give no TTFT or ITL", () => {
  const h = createHistory();
  const slots = (step, t) => rec({ step, iter: step, time_s: t, running: ["~gen0", "a"],
    scheduled: [entry("~gen0", 1, 5), entry("a", 1, 9)] });
  appendRecord(h, slots(0, 0), null);
  appendRecord(h, slots(1, 0.01), null);
  assert.equal(h.totals.tokens, 4);
  assert.equal(h.totals.ttft_count, 1); // a's first token only
  assert.equal(h.itlRing.size, 1); // a's second token only
  assert.equal(h.itlAll.total, 1);
});

test("a verify's tokens count up to the request's output length (the kept rule)", () => {
  // a: 10 prompt, 3 out. Its first token with the prompt, then a verify of 3 drafts that all
  // pass yields 4 tokens, of which max_tokens keeps 2 (vLLM's _update_request_with_output)
  const spec = (n, start, drafts, accepted) =>
    ({ ...entry("a", n, start, drafts ? "decode" : "prefill"), drafts, accepted });
  const records = [
    rec({ arrivals: ["a"], scheduled: [spec(10, 0, 0, 0)], new: ["a"], running: ["a"],
          new_blocks: { a: [1, 2, 3, 4] } }),
    rec({ step: 1, iter: 1, time_s: 0.01, scheduled: [spec(4, 10, 3, 3)], running: ["a"],
          finished: ["a"], released: ["a"] }),
  ];
  const { h } = build(records);
  assert.equal(h.totals.tokens, 3);
  assert.ok(Math.abs(h.cols.throughput_tok_per_s[1] - 3 / 0.02) < 1e-6);
});
