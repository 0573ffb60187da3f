import assert from "node:assert/strict";
import test from "node:test";

import { applyFleetFrame, createFleet } from "../../frontend/static/js/state/fleet.js";
import { laneOf, linkQueues, pdSummaryText, transferShare, transferState, transferText,
  ttftPartsText, waitingForKV } from "../../frontend/static/js/state/pd.js";

const info = { replicas: 3, router: "round-robin", scrape_interval_ms: 0, replica: 0, pool: "decode",
  pools: { prefill: { replicas: 1, router: "round-robin" }, decode: { replicas: 2, router: "least-kv" } },
  kv_link: { kind: "infiniband", gbps: 50, latency_ms: 0.01 }, pd_threshold: 0 };
const row = (replica, extra = {}) => ({ replica, num_running: 1, num_waiting: 0, kv_usage: 0.1,
  prefix_cache_hit_rate: null, p99_ttft_ms: null, pool: [10], ...extra });
const tr = (id, p, d, ready, start, done, failed = false) => ({ request_id: id, prefill_replica: p,
  decode_replica: d, num_blocks: 8, num_bytes: 8 * 2 ** 20, ready_s: ready, start_s: start, done_s: done, failed });
const frame = (time_s, pools, transfers = [], routed = []) => ({ type: "fleet", v: 1, engine: 0, time_s,
  replicas: [], routed, pools, transfers });

test("a P/D frame fills each pool's rows and the lanes, prefill first", () => {
  const f = createFleet(info);
  assert.equal(f.pools.prefill.length, 1);
  assert.equal(f.pools.decode.length, 2);
  applyFleetFrame(f, frame(1, { prefill: [row(0, { num_running: 4 })],
    decode: [row(1, { num_waiting_for_kv: 2, waiting_for_kv: ["a", "b"] })] }));
  assert.equal(f.pools.prefill[0].num_running, 4);
  assert.equal(f.pools.decode[1].num_waiting_for_kv, 2);
  assert.equal(laneOf(info, "decode", 1), 2);
  assert.equal(f.replicas[2].num_waiting_for_kv, 2); // the lane the fleet's derived values read
  assert.equal(f.pools.decode[0].num_running, 0); // a row the frame left out stays empty
  assert.deepEqual([...waitingForKV(f)], ["a", "b"]);
});

test("a request routed by both pools is kept twice, once per pool", () => {
  const f = createFleet(info);
  const a = (pool, replica) => ({ request_id: "r", arrival_s: 0, replica, scores: [], reason: "", pool });
  applyFleetFrame(f, frame(1, { prefill: [], decode: [] }, [], [a("decode", 1), a("prefill", 0)]));
  assert.deepEqual(f.arrivals.map((x) => x.pool), ["decode", "prefill"]);
});

test("a transfer is queued until its bytes move, moving until done, then done or failed", () => {
  const x = tr("r", 0, 1, 1.0, 1.5, 2.0);
  assert.deepEqual([0.9, 1.2, 1.5, 1.75, 2.0].map((t) => transferState(x, t)),
    ["queued", "queued", "moving", "moving", "done"]);
  assert.equal(transferShare(x, 1.75), 0.5);
  assert.equal(transferState(tr("f", 0, 1, 1, 1, 2, true), 2.5), "failed");
});

test("a link's queue counts its transfers not yet moving; other links are apart", () => {
  // two transfers ready on link 0->1 at once: the second waits for the first (core/kv_link.py)
  const ts = [tr("a", 0, 1, 1.0, 1.0, 1.4), tr("b", 0, 1, 1.0, 1.4, 1.8), tr("c", 0, 0, 1.0, 1.0, 1.2)];
  assert.deepEqual([...linkQueues(ts, 1.1)], [["0->1", 1]]);
  assert.deepEqual([...linkQueues(ts, 1.5)], []);
});

test("a transfer's words say which request, where, how many blocks and how long", () => {
  const text = transferText(tr("req-7", 0, 1, 1.0, 1.002, 1.012), 1.005);
  assert.match(text, /^req-7: P0 → D1, 8 blocks \(8\.4 MB\), moving; on the wire 10\.0 ms, queued 2\.00 ms first$/);
});

test("TTFT parts add up to the TTFT they show", () => {
  const text = ttftPartsText({ prefill_queue_ms: 1, prefill_ms: 20, transfer_ms: 3.5, first_decode_ms: 10 });
  assert.equal(text, "TTFT 34.5 ms = prefill queue 1.0 + prefill 20.0 + transfer 3.5 + first decode 10.0");
  assert.equal(ttftPartsText(undefined), "");
});

test("the summary's P/D line names the KV handoff's totals and each pool", () => {
  const summary = { kv_transfer: { transfers: 2, bytes: 3e6, mean_ms: 1.5, p99_ms: 2.25, p99_wait_ms: 0.5 },
    pools: { prefill: { replicas: [{ completed: 2 }] }, decode: { replicas: [{ completed: 1 }, { completed: 1 }] } } };
  assert.equal(pdSummaryText(summary), "simulated KV transfers: 2 (3.0 MB), mean 1.50 ms, p99 2.25 ms, " +
    "p99 wait 0.50 ms · completed per replica: prefill: r0 2 · decode: r0 1, r1 1");
  assert.equal(pdSummaryText({}), "");
});

test("a compare pane running a P/D variant is labelled by its name, else by its JSON", async () => {
  const { labelFor } = await import("../../frontend/static/js/ui/compare_mode.js");
  const pd = { prefill: { replicas: 1 }, decode: { replicas: 1 } };
  const named = [{ name: "lesson-pd: P/D 1:1", config: { prefill: { replicas: 1 }, decode: { replicas: 1 } } }];
  assert.equal(labelFor(pd, named), "lesson-pd: P/D 1:1");
  assert.equal(labelFor({ prefill: { replicas: 2 } }, named), 'prefill={"replicas":2}');
});
