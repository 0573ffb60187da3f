import assert from "node:assert/strict";
import test from "node:test";

import { KEEP_ARRIVALS, applyFleetFrame, arrivalWhy, createFleet, fleetHeadline, imbalance,
  lastArrivalTo, laneText } from "../../frontend/static/js/state/fleet.js";

const info = { replicas: 3, router: "least-kv", scrape_interval_ms: 50, replica: 1 };
const row = (replica, num_running, num_waiting, extra = {}) => ({ replica, num_running, num_waiting,
  kv_usage: 0.5, prefix_cache_hit_rate: null, p99_ttft_ms: null, pool: [0, 50, 100], ...extra });
const arrival = (id, replica, scores = [0, 0, 0]) => ({ request_id: id, arrival_s: 0, replica, scores, reason: `r${replica} had least KV` });
const frame = (time_s, replicas, routed = []) => ({ type: "fleet", v: 1, engine: 0, time_s, replicas, routed });

test("a frame replaces the rows and adds its arrivals once", () => {
  const f = createFleet(info);
  applyFleetFrame(f, frame(1, [row(0, 2, 0), row(1, 0, 0), row(2, 1, 1)], [arrival("a", 0)]));
  applyFleetFrame(f, frame(2, [row(0, 3, 0)], [arrival("a", 0), arrival("b", 2)]));
  assert.deepEqual(f.arrivals.map((a) => a.request_id), ["a", "b"]);
  assert.equal(f.replicas[0].num_running, 3);
  assert.equal(f.replicas[2].num_waiting, 1); // a row the frame left out is kept
});

test("a frame earlier than the last (a seek back) starts the arrivals again", () => {
  const f = createFleet(info);
  applyFleetFrame(f, frame(5, [row(0, 1, 0)], [arrival("late", 0)]));
  applyFleetFrame(f, frame(1, [row(0, 1, 0)], [arrival("early", 1)]));
  assert.deepEqual(f.arrivals.map((a) => a.request_id), ["early"]);
});

test("only the newest KEEP_ARRIVALS arrivals are kept", () => {
  const f = createFleet(info);
  const many = Array.from({ length: KEEP_ARRIVALS + 5 }, (_, k) => arrival(`q${k}`, k % 3));
  applyFleetFrame(f, frame(1, [row(0, 0, 0)], many));
  assert.equal(f.arrivals.length, KEEP_ARRIVALS);
  assert.equal(f.arrivals[0].request_id, "q5");
  assert.equal(lastArrivalTo(f, 1).request_id, `q${KEEP_ARRIVALS + 4}`);
});

test("imbalance: the busiest replica's load over the mean, null when idle", () => {
  const f = createFleet(info);
  assert.equal(imbalance(f).ratio, null);
  applyFleetFrame(f, frame(1, [row(0, 4, 2), row(1, 1, 0), row(2, 1, 1)]));
  // loads 6, 1, 2: mean 3, the busiest holds 2x
  assert.deepEqual(imbalance(f), { ratio: 2, busiest: 0 });
  assert.match(fleetHeadline(f), /busiest r0 holds 2\.0x the mean load/);
  assert.match(fleetHeadline(f), /router least-kv · sees replicas 50 ms stale/);
});

test("a lane's words and an arrival's why", () => {
  assert.equal(laneText(row(0, 3, 1, { kv_usage: 0.854, prefix_cache_hit_rate: 0.4, p99_ttft_ms: 1234 })),
    "run 3 · wait 1 · KV 85% · hit 40% · p99 TTFT 1.23 s");
  assert.equal(arrivalWhy(arrival("r7", 2, [0.1, 0.25, 0.9]), "least-kv"),
    "r7 → replica 2 (least-kv): r2 had least KV; scores r0 0.1, r1 0.25, r2 0.9 (higher is preferred)");
});
