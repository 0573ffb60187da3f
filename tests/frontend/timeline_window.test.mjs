import assert from "node:assert/strict";
import test from "node:test";

import {
  dragWindow, legendStates, requestCount, ROW_LIMIT, rowsHistory, stackDensity, STATES, timelineMode, timelineQuery,
} from "../../frontend/static/js/state/timeline_window.js";

const COLUMNS = {
  t_s: [0, 1, 2, 3],
  waiting: [2, null, 0, 0.5], waiting_for_kv: [0, null, 0, 0], prefill: [1, null, 0, 0], decode: [3, null, 1, 0],
  stalled: [0, null, 0, 0], preempted: [1, null, 0, 0],
};

test("a small run without a window draws its own rows; a big one or a window asks the server", () => {
  assert.equal(timelineMode(ROW_LIMIT, null, null), "live");
  assert.equal(timelineMode(ROW_LIMIT + 1, null, null), "density");
  assert.equal(timelineMode(ROW_LIMIT + 1, null, { rows: null }), "density");
  const w = { start_s: 1, end_s: 2 };
  assert.equal(timelineMode(5, w, null), "density"); // still asking
  assert.equal(timelineMode(5000, w, { rows: [] }), "rows");
});

test("the request count is the init's while the request list fills up", () => {
  assert.equal(requestCount({ init: { num_requests: 3000, requests: [] }, run: { ids: ["a"] } }), 3000);
  assert.equal(requestCount({ init: { requests: [{}, {}] }, run: { ids: ["a", "b", "c"] } }), 3);
  assert.equal(requestCount(null), 0);
});

test("states stack in order, bins where nothing ran stay empty, the top is the largest total", () => {
  const { stacks, max } = stackDensity(COLUMNS);
  assert.equal(max, 7);
  assert.equal(stacks[1], null);
  assert.deepEqual(stacks[0], [[0, 2], [2, 2], [2, 3], [3, 6], [6, 6], [6, 7]]);
  assert.deepEqual(stacks[3].map(([lo, hi]) => hi - lo), [0.5, 0, 0, 0, 0, 0]);
  assert.equal(stacks[0].length, STATES.length);
  const kv = stackDensity({ ...COLUMNS, waiting_for_kv: [3, null, 0, 0] });
  assert.deepEqual(kv.stacks[0].slice(0, 3), [[0, 2], [2, 5], [5, 6]]); // over the waiting, under prefill
  assert.equal(kv.max, 10);
});

test("the legend names waiting for KV only where some request waits for it", () => {
  assert.deepEqual(legendStates(COLUMNS), STATES.filter((s) => s !== "waiting_for_kv"));
  assert.deepEqual(legendStates({ ...COLUMNS, waiting_for_kv: [0, null, 0.2, 0] }), STATES);
  assert.ok(legendStates({ ...COLUMNS, stalled: [0, null, 0, 0] }).includes("stalled")); // the rest always
});

test("server rows read as a history: ids in order, spans by id, colour index by id", () => {
  const h = rowsHistory({ start_s: 4, end_s: 6, rows: [
    { id: "r9", index: 9, spans: [["waiting", 4, 4.5], ["prefill", 4.5, 4.6]] },
    { id: "r2", index: 2, spans: [["decode", 4, 6]] },
  ] });
  assert.deepEqual(h.spanIds, ["r9", "r2"]);
  assert.deepEqual(h.spans.get("r9")[1], { kind: "prefill", t0_s: 4.5, t1_s: 4.6 });
  assert.equal(h.index.get("r2"), 2);
  assert.equal(h.t0_s, 4);
});

test("a drag across the timeline is a window in time; a click is none", () => {
  const layout = { labelW: 64, t0: 10, t1: 20, tOf: (x) => 10 + ((x - 64) / 100) * 10 };
  assert.deepEqual(dragWindow(layout, 114, 84), { start_s: 12, end_s: 15 });
  assert.deepEqual(dragWindow(layout, 0, 84), { start_s: 10, end_s: 12 }); // from the labels: the start
  assert.equal(dragWindow(layout, 100, 102), null);
  assert.equal(dragWindow(null, 0, 100), null);
});

test("the query names the window only when there is one", () => {
  const q = new URLSearchParams(timelineQuery({ start_s: 1.5, end_s: 3 }, 300, 1));
  assert.deepEqual(Object.fromEntries(q), { engine: "1", bins: "300", max_rows: String(ROW_LIMIT), start_s: "1.5", end_s: "3" });
  assert.equal(new URLSearchParams(timelineQuery(null, 300)).has("start_s"), false);
});
