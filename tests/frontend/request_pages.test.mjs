import assert from "node:assert/strict";
import test from "node:test";

import { loadRequests } from "../../frontend/static/js/transport/requests.js";
import { lastArrival } from "../../frontend/static/js/state/progress.js";
import { applyRequests, createPane, createStore } from "../../frontend/static/js/state/store.js";
import { applyKeyframe } from "../../frontend/static/js/state/keyframe.js";

const spec = (k) => ({ id: `r${k}`, prompt_len: 10 + k, output_len: 2, arrival_s: k % 2 ? 50 - k : k, arrival_step: null });
const LIST = Array.from({ length: 23 }, (_, k) => spec(k));
LIST[20].arrival_s = 60; // the last arrival is in the last page

/** A fake fetch over LIST: `fail` answers (status codes) come first, then the pages. */
function server(fail = []) {
  const asked = [];
  const fetchFn = async (url) => {
    asked.push(url);
    const status = fail.shift();
    if (status === "network") throw new TypeError("network down");
    if (status) return { ok: false, status, json: async () => ({}) };
    const q = new URL(url, "http://x").searchParams;
    const offset = Number(q.get("offset"));
    const limit = Math.min(Number(q.get("limit")), 10);
    return { ok: true, status: 200, json: async () => ({ total: LIST.length, offset, requests: LIST.slice(offset, offset + limit) }) };
  };
  return { fetchFn, asked };
}

const now = (fn) => fn();

test("the pages are read in order until every request is in, a failed one asked again", async () => {
  const { fetchFn, asked } = server([503, "network"]);
  const pages = [];
  await loadRequests("s 1", LIST.length, { onPage: (p) => pages.push(p), current: () => true }, { fetchFn, setTimer: now });
  assert.deepEqual(pages.flatMap((p) => p.requests), LIST);
  assert.deepEqual(pages.map((p) => p.offset), [0, 10, 20]);
  assert.equal(asked.length, 5);
  assert.match(asked[0], /^\/api\/sessions\/s%201\/requests\?offset=0&limit=10000$/);
});

test("a session that has gone, or a newer init, stops the loading", async () => {
  const gone = server([404]);
  const pages = [];
  await loadRequests("s", LIST.length, { onPage: (p) => pages.push(p), current: () => true }, { fetchFn: gone.fetchFn, setTimer: now });
  assert.deepEqual(pages, []);
  assert.equal(gone.asked.length, 1);
  let current = true;
  const newer = server();
  await loadRequests("s", LIST.length, { onPage: (p) => { pages.push(p); current = false; }, current: () => current },
    { fetchFn: newer.fetchFn, setTimer: now });
  assert.equal(pages.length, 1);
});

test("every pane's run and list grow by each page; views read a list still filling", () => {
  const store = createStore(null);
  store.panes = [createPane({ num_gpu_blocks: 8, block_size: 4, num_requests: 23 }),
    createPane({ num_gpu_blocks: 8, block_size: 4, num_requests: 23 })];
  applyRequests(store, { offset: 0, total: 23, requests: LIST.slice(0, 10) });
  const pane = store.panes[1];
  assert.equal(lastArrival(pane.init), 49); // r1 at 49 s, the latest of the first page
  assert.deepEqual(pane.run.ids, LIST.slice(0, 10).map((r) => r.id));
  // a keyframe over the loaded requests; the rest are pending until their page comes
  applyKeyframe(pane.run, { step: 3, requests: { r0: { status: "running", num_computed_tokens: 4, num_output_tokens: 0 } },
    tables: { r0: [1, 2] }, cached_blocks: [], running: ["r0"], waiting: [] });
  applyRequests(store, { offset: 0, total: 23, requests: LIST.slice(0, 10) }); // again: ignored
  applyRequests(store, { offset: 10, total: 23, requests: LIST.slice(10) });
  assert.equal(pane.run.reqs.length, 23);
  assert.deepEqual(pane.run.reqs.map((r) => r.spec), LIST);
  assert.equal(pane.run.reqs[0].status, "running");
  assert.equal(pane.run.reqs[22].status, "pending");
  assert.equal(lastArrival(pane.init), 60);
  assert.equal(pane.init.requests.length, 23);
  assert.equal(store.panes[0].init.requests.length, 23);
});
