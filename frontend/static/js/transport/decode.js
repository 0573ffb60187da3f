// Decodes the wire's packed records and columnar keyframes (docs/protocol.md) into the plain
// objects the state layer reads: records shaped like StepRecord.to_dict(), keyframes with ids.
// Mirrors backend/servescope/api/wire/serialize.py and stream_state.py line for line; tests/api
// checks the two agree.

import { entryUpdate, unpackDrafts } from "./drafts.js";
import { CARRIED, KV_LISTS, LISTS, STATUS } from "./keys.js";

export { STATUS };

/** Rounds as the server predicts: Math.floor(x * 1e6 + 0.5) / 1e6. */
export function round6(x) {
  return Math.floor(x * 1e6 + 0.5) / 1e6;
}

/** A packed message names a request whose page of the list has not arrived yet. */
export class MissingRequests extends Error {
  constructor(index) {
    super(`request ${index} is not loaded yet`);
    this.index = index;
  }
}

export class StreamState {
  /** `requests`: the session's list so far; `total`: its length once every page is in. */
  constructor(requests, total = requests.length) {
    this.ids = requests.map((r) => r.id);
    this.promptLen = new Map(requests.map((r) => [r.id, r.prompt_len]));
    this.outputLen = new Map(requests.map((r) => [r.id, r.output_len]));
    this.total = total;
    this.status = new Map();
    this.computed = new Map();
    this.outputs = new Map();
    this.cachedTokens = new Map();
    this.preemptions = new Map();
    this.tables = new Map();
    this.cached = new Set();
    this.running = []; // after the update: finished requests removed
    this.waiting = [];
    this.last = null;
    this.iter = -1;
    this.step = -1;
    this.carried = { num_usable_blocks: null, token_budget: null, max_num_seqs: null, kv_waste: null };
  }

  rid(ref) {
    if (typeof ref !== "number") return ref;
    if (ref >= this.ids.length && ref < this.total) throw new MissingRequests(ref);
    return this.ids[ref];
  }

  /** The next page of the request list. */
  addRequests(requests) {
    for (const r of requests) {
      this.ids.push(r.id);
      this.promptLen.set(r.id, r.prompt_len);
      this.outputLen.set(r.id, r.output_len);
    }
  }

  numTokens(rid) {
    return (this.promptLen.get(rid) ?? 0) + (this.outputs.get(rid) ?? 0);
  }

  predictQueues(rec) {
    const gone = new Set(rec.preempted);
    const admitted = new Set([...rec.new, ...rec.resumed]);
    const rejected = new Set(rec.rejected.map((r) => r.id));
    const queue = [...this.waiting, ...rec.arrivals];
    const running = [...this.running.filter((r) => !gone.has(r)), ...queue.filter((r) => admitted.has(r))];
    const waiting = [...rec.preempted].reverse().concat(queue.filter((r) => !admitted.has(r) && !rejected.has(r)));
    return [running, waiting];
  }

  /** [start, n, sampled, kind] of a scheduled entry; `n` counts its drafts. */
  predictEntry(rid, start, n, hits, drafts = 0) {
    const total = this.numTokens(rid);
    if (start === undefined) start = Object.hasOwn(hits, rid) ? hits[rid] : (this.computed.get(rid) ?? 0);
    if (n === undefined) n = total - start + drafts;
    const decode = n === 1 + drafts && start === total - 1 && (this.outputs.get(rid) ?? 0) >= 1;
    return [start, n, start + n - drafts === total, decode ? "decode" : "prefill"];
  }

  apply(rec) {
    for (const r of rec.arrivals) this.status.set(r, 1);
    for (const r of rec.preempted) {
      this.preemptions.set(r, (this.preemptions.get(r) ?? 0) + 1);
      if (this.status.get(r) === 4) continue; // (async) finished by the previous record's update
      this.status.set(r, 3);
      this.computed.set(r, 0);
      this.tables.delete(r);
    }
    for (const r of [...rec.new, ...rec.resumed]) this.status.set(r, 2);
    for (const [r, n] of Object.entries(rec.num_cached_tokens)) this.cachedTokens.set(r, n);
    for (const e of rec.scheduled) {
      const numOutput = this.outputs.get(e.id) ?? 0;
      const [computed, kept] = entryUpdate(e, numOutput, this.outputLen.get(e.id));
      this.computed.set(e.id, computed);
      if (e.sampled) this.outputs.set(e.id, numOutput + kept);
    }
    for (const [r, blocks] of Object.entries(rec.new_blocks)) {
      if (!this.tables.has(r)) this.tables.set(r, []);
      this.tables.get(r).push(...blocks);
    }
    for (const ev of rec.kv_events) {
      for (const b of ev.block_ids) (ev.type === "BlockStored" ? this.cached.add(b) : this.cached.delete(b));
    }
    const finished = new Set(rec.finished);
    for (const r of rec.finished) this.status.set(r, 4);
    for (const r of rec.released) this.tables.delete(r);
    for (const r of rec.rejected) this.status.set(r.id, 5);
    this.running = rec.running.filter((r) => !finished.has(r));
    this.waiting = rec.waiting.slice();
    this.last = rec;
    this.iter = rec.iter;
    this.step = rec.step;
    for (const [, name] of CARRIED) this.carried[name] = rec[name];
  }
}

function pairs(flat) {
  const m = new Map();
  for (let k = 0; k + 1 < flat.length; k += 2) m.set(flat[k], flat[k + 1]);
  return m;
}

function unpackScheduled(state, p, rec) {
  const ids = p.sc ? p.sc.map((r) => state.rid(r)) : rec.running;
  const starts = pairs(p.ss ?? []);
  const ns = pairs(p.sn ?? []);
  const flipSampled = new Set(p.sm ?? []);
  const flipKind = new Set(p.sk ?? []);
  const spec = unpackDrafts(p, ids, state.last);
  return ids.map((r, pos) => {
    const drafts = spec ? spec[pos][0] : 0;
    let [start, n, sampled, kind] = state.predictEntry(r, starts.get(pos), ns.get(pos), rec.num_cached_tokens, drafts);
    if (flipSampled.has(pos)) sampled = !sampled;
    if (flipKind.has(pos)) kind = kind === "prefill" ? "decode" : "prefill";
    const e = { id: r, n, start, sampled, kind };
    if (spec) [e.drafts, e.accepted] = spec[pos];
    return e;
  });
}

function unpackNewBlocks(state, flat) {
  const out = {};
  for (let k = 0; k < flat.length; ) {
    const count = flat[k + 1];
    out[state.rid(flat[k])] = flat.slice(k + 2, k + 2 + count);
    k += 2 + count;
  }
  return out;
}

/** A packed cache event; an eviction (one block removed by no request) is its block id alone. */
function unpackEvent(state, ev) {
  const [kind, ids, req] = typeof ev === "number" ? [0, [ev], null] : ev;
  return { type: kind ? "BlockStored" : "BlockRemoved", block_ids: ids, req: req === null ? null : state.rid(req) };
}

/** `before` with the changes "kd" gives by position (null: the same value). */
function wasteChanged(before, kd) {
  const out = {};
  Object.keys(before).forEach((key, k) => { out[key] = kd[k] === null ? before[key] : kd[k]; });
  return out;
}

/** The to_dict() record that packed record `p` stands for; folds it into `state`. */
export function unpack(state, p) {
  const rid = (r) => state.rid(r);
  const rec = { step: p.s ?? state.step + 1, iter: p.i, time_s: p.t, step_time_ms: p.ms };
  for (const [key, name] of LISTS) rec[name] = (p[key] ?? []).map(rid);
  if (KV_LISTS.some(([key]) => key in p)) { // P/D: both, as StepRecord.to_dict() gives them
    for (const [key, name] of KV_LISTS) rec[name] = (p[key] ?? []).map(rid);
  }
  rec.released = p.rl ? p.rl.map(rid) : rec.finished.slice();
  rec.rejected = (p.rj ?? []).map(([r, reason]) => ({ id: rid(r), reason }));
  const ct = p.ct ?? [];
  rec.num_cached_tokens = {};
  for (let k = 0; k < ct.length; k += 2) rec.num_cached_tokens[rid(ct[k])] = ct[k + 1];
  const [running, waiting] = state.predictQueues(rec);
  rec.running = p.rn ? p.rn.map(rid) : running;
  rec.waiting = p.wt ? p.wt.map(rid) : waiting;
  rec.scheduled = unpackScheduled(state, p, rec);
  rec.new_blocks = unpackNewBlocks(state, p.nb ?? []);
  rec.freed_blocks = (p.fb ?? []).slice();
  rec.kv_events = (p.ke ?? []).map((ev) => unpackEvent(state, ev));
  rec.num_free_blocks = p.nf;
  for (const [key, name] of CARRIED) rec[name] = key in p ? p[key] : state.carried[name];
  if (p.kd) rec.kv_waste = wasteChanged(state.carried.kv_waste, p.kd);
  const nu = rec.num_usable_blocks;
  rec.kv_usage = "ku" in p ? p.ku : nu ? round6(1 - p.nf / nu) : 0;
  Object.assign(rec, p.x ?? {});
  state.apply(rec);
  return rec;
}

const FINAL = -1; // a count that is the final one the request's list entry gives

/** An expanded keyframe with its FINAL marks back as the counts they stand for (output_len
 * output tokens, prompt_len + output_len - 1 computed); MissingRequests when a marked request's
 * page of the list has not arrived. */
export function resolveFinal(requests, kf) {
  const final = (k, computed) => {
    if (k >= requests.length) throw new MissingRequests(k);
    const q = requests[k];
    return computed ? q.prompt_len + q.output_len - 1 : q.output_len;
  };
  const resolved = (name, computed) => kf[name].map((v, k) => (v === FINAL ? final(k, computed) : v));
  return { ...kf, num_computed_tokens: resolved("num_computed_tokens", true),
    num_output_tokens: resolved("num_output_tokens", false) };
}

/** The StreamState a keyframe was taken from, for decoding the records after it. */
export function loadKeyframe(requests, kf, total = requests.length) {
  // every request the keyframe names (not pending) must be loaded: its status is not 0
  let named = kf.status.length;
  while (named > 0 && kf.status[named - 1] === 0) named -= 1;
  if (named > requests.length) throw new MissingRequests(named - 1);
  const state = new StreamState(requests, total);
  const cols = [["num_computed_tokens", state.computed], ["num_output_tokens", state.outputs],
    ["num_cached_tokens", state.cachedTokens], ["num_preemptions", state.preemptions]];
  state.ids.forEach((r, k) => {
    if (kf.status[k] !== 0) state.status.set(r, kf.status[k]);
    for (const [col, target] of cols) if (kf[col][k]) target.set(r, kf[col][k]);
  });
  state.tables = new Map(kf.tables.map(([r, b]) => [state.rid(r), b.slice()]));
  state.cached = new Set(kf.cached_blocks);
  state.running = kf.running.map((r) => state.rid(r));
  state.waiting = kf.waiting.map((r) => state.rid(r));
  if (kf.record) {
    state.last = kf.record;
    state.iter = kf.iter;
    state.step = kf.record.step;
    for (const [, name] of CARRIED) state.carried[name] = kf.record[name];
  }
  return state;
}

/** The keyframe with ids and status names, as the state layer applies it. */
export function decodeKeyframe(state, kf) {
  const requests = {};
  state.ids.forEach((r, k) => {
    requests[r] = {
      status: STATUS[kf.status[k]] ?? "pending", num_computed_tokens: kf.num_computed_tokens[k],
      num_output_tokens: kf.num_output_tokens[k], num_cached_tokens: kf.num_cached_tokens[k],
      num_preemptions: kf.num_preemptions[k],
    };
  });
  const tables = {};
  for (const [r, blocks] of kf.tables) tables[state.rid(r)] = blocks;
  return {
    type: "keyframe", v: kf.v, engine: kf.engine, iter: kf.iter, step: kf.step, time_s: kf.time_s,
    requests, tables, cached_blocks: kf.cached_blocks,
    block_owner: kf.block_owner.map((o) => (o === null ? null : state.rid(o))),
    block_ref_count: kf.block_ref_count,
    running: kf.running.map((r) => state.rid(r)), waiting: kf.waiting.map((r) => state.rid(r)),
    record: kf.record,
  };
}
