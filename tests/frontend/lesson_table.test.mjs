import assert from "node:assert/strict";
import test from "node:test";

import { finishedCell, tableNote, tableRow } from "../../frontend/static/js/state/lesson_table.js";
import { applyRecords, createPane, createStore } from "../../frontend/static/js/state/store.js";
import { entry, init, rec } from "./helpers.mjs";

// Two modes on requests a and b, both arriving at 0: "one at a time" gives a its first token
// after 10 ms and b none yet; "together" gives both theirs after 30 ms. At that cursor the
// live mean TTFT ranks one at a time first, though b has not even started there.
function panes() {
  const store = createStore(null);
  const one = createPane(init({ num_requests: 2 }), "one at a time");
  const both = createPane(init({ num_requests: 2 }), "together");
  store.panes = [one, both];
  applyRecords(store, 0, [rec({ arrivals: ["a", "b"], scheduled: [entry("a", 10, 0)], running: ["a"], waiting: ["b"] })]);
  applyRecords(store, 1, [rec({ arrivals: ["a", "b"], step_time_ms: 30,
    scheduled: [entry("a", 10, 0), entry("b", 6, 0)], running: ["a", "b"] })]);
  return { one, both };
}

test("a live row says how many requests its figures have seen finish and get a first token", () => {
  const { one, both } = panes();
  const [r1, r2] = [tableRow(one), tableRow(both)];
  assert.ok(r1.mean_ttft_ms < r2.mean_ttft_ms); // the misleading early ranking the note warns of
  assert.equal(r1.num_first_tokens, 1);
  assert.equal(r2.num_first_tokens, 2);
  assert.equal(finishedCell(r1), "0 of 2");
  assert.equal(r1.whole, false);
  const note = tableNote([r1, r2]);
  assert.match(note, /so far/i);
  assert.match(note, /No ranking until every run has ended/);
});

test("at the end of every run the rows are the whole runs' summaries and the note says so", () => {
  const { one, both } = panes();
  for (const [pane, ttft] of [[one, 25], [both, 30]]) {
    Object.assign(pane, { status: "done", summary: { output_throughput: 7, mean_ttft_ms: ttft, p99_itl_ms: 1, completed: 2 } });
    pane.init = { ...pane.init, num_records: 1 };
  }
  const rows = [tableRow(one), tableRow(both)];
  assert.deepEqual(rows.map((r) => [r.mean_ttft_ms, r.whole, finishedCell(r)]), [[25, true, "2 of 2"], [30, true, "2 of 2"]]);
  assert.match(tableNote(rows), /^Whole runs/);
  assert.doesNotMatch(tableNote(rows), /so far/);
  // one run still playing: no verdict yet
  both.status = "ready";
  assert.match(tableNote([tableRow(one), tableRow(both)]), /No ranking/);
});
