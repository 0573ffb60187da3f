// A P/D fleet's state beyond a fleet's (state/fleet.js): each pool's rows (a `fleet` frame's
// `pools`), the KV transfers about the frame's time, and what the P/D view derives from them:
// a transfer's state at a time, each link's queue, the words a transfer and a request's TTFT
// parts are shown in. Lanes: prefill replicas first, then decode (init's fleet.pools).

const POOLS = ["prefill", "decode"];

const emptyRow = (replica) => ({ replica, num_running: 0, num_waiting: 0, kv_usage: 0,
  prefix_cache_hit_rate: null, p99_ttft_ms: null, pool: [], num_waiting_for_kv: 0, waiting_for_kv: [] });

/** The P/D part of a fleet's state, from init's fleet info (its `pools`). */
export function createPools(info) {
  const pools = {};
  for (const name of POOLS) pools[name] = Array.from({ length: info.pools[name].replicas }, (_, k) => emptyRow(k));
  return { pools, transfers: [] };
}

/** A replica's lane: its index among both pools' lanes. */
export const laneOf = (info, pool, replica) => (pool === "decode" ? info.pools.prefill.replicas : 0) + replica;

/** A P/D `fleet` frame: each pool's rows (also kept by lane in fleet.replicas, so a fleet's
 * derived values hold) and the transfers about its time. */
export function applyPDFrame(fleet, msg) {
  for (const name of POOLS) {
    for (const row of msg.pools[name] ?? []) {
      fleet.pools[name][row.replica] = row;
      fleet.replicas[laneOf(fleet.info, name, row.replica)] = row;
    }
  }
  fleet.transfers = msg.transfers ?? [];
}

/** Where a transfer stands at simulated time t: queued (prefill done, its bytes not moving:
 * waiting for the decode side's admission or for the link), moving, done, or failed. */
export function transferState(tr, t) {
  if (tr.failed && t >= tr.done_s) return "failed";
  if (t < tr.start_s) return "queued";
  return t < tr.done_s ? "moving" : "done";
}

/** How far a moving transfer's bytes are across (0..1). */
export function transferShare(tr, t) {
  if (t <= tr.start_s) return 0;
  if (t >= tr.done_s || tr.done_s <= tr.start_s) return 1;
  return (t - tr.start_s) / (tr.done_s - tr.start_s);
}

/** Each link's queue at t: "p->d" -> transfers on it not yet moving (they contend for it). */
export function linkQueues(transfers, t) {
  const queues = new Map();
  for (const tr of transfers) {
    if (transferState(tr, t) !== "queued") continue;
    const key = `${tr.prefill_replica}->${tr.decode_replica}`;
    queues.set(key, (queues.get(key) ?? 0) + 1);
  }
  return queues;
}

const ms = (s) => `${((s) * 1000).toFixed(s < 0.01 ? 2 : 1)} ms`;
const mb = (b) => (b >= 1e9 ? `${(b / 1e9).toFixed(2)} GB` : `${(b / 1e6).toFixed(1)} MB`);

/** A transfer in words: which request, from where to where, how much, how long. */
export function transferText(tr, t) {
  const state = transferState(tr, t);
  const wait = tr.start_s - tr.ready_s;
  return `${tr.request_id}: P${tr.prefill_replica} → D${tr.decode_replica}, ${tr.num_blocks} blocks ` +
    `(${mb(tr.num_bytes)}), ${state}; on the wire ${ms(tr.done_s - tr.start_s)}` +
    (wait > 0 ? `, queued ${ms(wait)} first` : "");
}

/** A pool lane's words, shorter than a fleet lane's (two pools share the width): its counts
 * and KV use. */
export const poolLaneText = (row) =>
  `run ${row.num_running} · wait ${row.num_waiting} · KV ${Math.round(100 * (row.kv_usage ?? 0))}%`;

/** The requests a decode replica admitted that still wait for their KV, over both pools. */
export function waitingForKV(fleet) {
  return new Set(fleet.pools.decode.flatMap((row) => row.waiting_for_kv ?? []));
}

/** The line over the pools: labelled simulated, each pool's size and router, the link. */
export function pdHeadline(fleet) {
  const { pools, kv_link: link, pd_threshold: threshold } = fleet.info;
  const moving = fleet.transfers.filter((tr) => transferState(tr, fleet.time_s) === "moving").length;
  const rule = threshold ? ` · prefills locally under ${threshold} uncached tokens` : "";
  return `simulated P/D · prefill ${pools.prefill.replicas} (${pools.prefill.router}) | ` +
    `${link.kind} ${link.gbps} GB/s | decode ${pools.decode.replicas} (${pools.decode.router})` +
    `${rule} · ${moving} moving`;
}

const PARTS = [["prefill_queue_ms", "prefill queue"], ["prefill_ms", "prefill"],
  ["transfer_ms", "transfer"], ["first_decode_ms", "first decode"]];

/** A request's TTFT in its parts (the summary's ttft_parts[id]), as words; "" when unknown. */
export function ttftPartsText(parts) {
  if (!parts) return "";
  const total = PARTS.reduce((s, [k]) => s + (parts[k] ?? 0), 0);
  return `TTFT ${total.toFixed(1)} ms = ` + PARTS.map(([k, name]) => `${name} ${(parts[k] ?? 0).toFixed(1)}`).join(" + ");
}

/** The summary's P/D lines: the KV handoff's totals and each pool's replicas' completions. */
export function pdSummaryText(summary) {
  const kv = summary?.kv_transfer;
  if (!kv) return "";
  const pools = POOLS.map((name) => `${name}: ${(summary.pools?.[name]?.replicas ?? [])
    .map((r, k) => `r${k} ${r.completed ?? 0}`).join(", ")}`).join(" · ");
  return `simulated KV transfers: ${kv.transfers ?? "-"} (${mb(kv.bytes)}), mean ${kv.mean_ms.toFixed(2)} ms, ` +
    `p99 ${kv.p99_ms.toFixed(2)} ms, p99 wait ${kv.p99_wait_ms.toFixed(2)} ms · completed per replica: ${pools}`;
}
