// A fleet's state as the page holds it: init's fleet info (replicas, router, the viewed
// replica), each replica's newest row from the server's `fleet` frames, and the arrivals routed
// lately (what the fleet view draws going to their replicas); plus the derived values the view
// shows (load, imbalance, why a request went where it went).

import { applyPDFrame, createPools } from "./pd.js";

// The routed arrivals the view keeps (the newest; older ones have left the picture).
export const KEEP_ARRIVALS = 24;

/** `info`: init's engines[k].fleet ({replicas, router, scrape_interval_ms, replica, no_seek}). */
export function createFleet(info) {
  const empty = (replica) => ({ replica, num_running: 0, num_waiting: 0, kv_usage: 0,
    prefix_cache_hit_rate: null, p99_ttft_ms: null, pool: [] });
  return {
    info,
    time_s: 0,
    replicas: Array.from({ length: info.replicas }, (_, k) => empty(k)),
    arrivals: [],
    ...(info.pools ? createPools(info) : {}), // P/D: state/pd.js
  };
}

// An arrival's key: a P/D request is routed twice, by the decode pool then the prefill pool.
const arrivalKey = (a) => (a.pool ? `${a.pool}:${a.request_id}` : a.request_id);

/** A `fleet` message: the rows replace the old ones; its arrivals join the kept ones (a frame
 * going back in time, after a seek, starts the list again). */
export function applyFleetFrame(fleet, msg) {
  if (msg.time_s < fleet.time_s) fleet.arrivals = [];
  fleet.time_s = msg.time_s;
  for (const row of msg.replicas) fleet.replicas[row.replica] = row;
  if (msg.pools) applyPDFrame(fleet, msg);
  const known = new Set(fleet.arrivals.map(arrivalKey));
  for (const a of msg.routed) {
    if (known.has(arrivalKey(a))) continue;
    fleet.arrivals.push(a);
  }
  if (fleet.arrivals.length > KEEP_ARRIVALS) fleet.arrivals.splice(0, fleet.arrivals.length - KEEP_ARRIVALS);
}

/** A replica's load: the requests it holds (running and waiting). */
export const loadOf = (row) => row.num_running + row.num_waiting;

/** How uneven the fleet is: the busiest replica's load over the mean (1 = even; null when
 * nothing runs), and which replica that is. */
export function imbalance(fleet) {
  const loads = fleet.replicas.map(loadOf);
  const total = loads.reduce((a, b) => a + b, 0);
  if (!total) return { ratio: null, busiest: null };
  const top = Math.max(...loads);
  return { ratio: top / (total / loads.length), busiest: loads.indexOf(top) };
}

const pct = (x) => (x == null ? "-" : `${Math.round(100 * x)}%`);
const ms = (x) => (x == null ? "-" : x >= 1000 ? `${(x / 1000).toFixed(2)} s` : `${Math.round(x)} ms`);

/** A lane's words: its counts, KV %, prefix hit rate and p99 TTFT so far. */
export function laneText(row) {
  return `run ${row.num_running} · wait ${row.num_waiting} · KV ${pct(row.kv_usage)} · hit ` +
    `${pct(row.prefix_cache_hit_rate)} · p99 TTFT ${ms(row.p99_ttft_ms)}`;
}

/** Why a routed arrival went where it did: the router's reason and each replica's score. */
export function arrivalWhy(arrival, router) {
  const scores = arrival.scores.map((s, k) => `r${k} ${Number(s.toFixed(3))}`).join(", ");
  return `${arrival.request_id} → replica ${arrival.replica} (${router}): ${arrival.reason}` +
    (scores ? `; scores ${scores} (higher is preferred)` : "");
}

/** The newest arrival routed to `replica`, else null. */
export function lastArrivalTo(fleet, replica) {
  for (let k = fleet.arrivals.length - 1; k >= 0; k--) if (fleet.arrivals[k].replica === replica) return fleet.arrivals[k];
  return null;
}

/** The line over the lanes: the router, how stale its view is, and the imbalance. */
export function fleetHeadline(fleet) {
  const { router, replicas, scrape_interval_ms: scrape } = fleet.info;
  const { ratio, busiest } = imbalance(fleet);
  const stale = scrape == null ? "" : ` · sees replicas ${scrape} ms stale at most`;
  const uneven = ratio == null ? "idle" : `busiest r${busiest} holds ${ratio.toFixed(1)}x the mean load`;
  return `${replicas} replicas · router ${router}${stale} · ${uneven}`;
}
