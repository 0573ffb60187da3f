// Append-only history of a run, one entry per record (by `iter`): the metrics columns the charts
// plot, per-request timeline spans, and each step's batch for the strip of past steps.
// Records replayed after a seek back are already known and leave the history unchanged.

import { entryUpdate } from "../transport/drafts.js";
import { isPlaceholder } from "./reduce.js";
import { LogHistogram, Ring } from "./stats.js";

// Column names carry their unit; every array has one entry per record index.
export const COLUMNS = [
  "t_s", "step", "num_scheduled_tokens", "output_tokens_per_s",
  "ttft_p50_ms", "ttft_p99_ms", "itl_p50_ms", "itl_p99_ms", "kv_usage_pct",
  "num_running", "num_waiting", "num_preempted", "num_preemptions_total",
  "throughput_tok_per_s", "mean_ttft_ms", "p99_itl_ms", "kv_waste_pct", "start_s", "iter",
  "num_finished_total", "num_first_tokens_total", "acceptance_rate", "mean_acceptance_length",
];

const RATE_WINDOW = 32; // records in the rolling output-rate window
const BATCH_KEEP = 4096; // steps of batch composition kept for the strip

export function createHistory() {
  const cols = {};
  for (const c of COLUMNS) cols[c] = [];
  return {
    cols,
    length: 0,
    lastIter: -1,
    stepToIter: new Map(),
    spans: new Map(), // id -> [{kind, i0, i1, t0_s, t1_s, n}]
    spanIds: [], // ids in the order their first span appeared: the timeline's rows
    batches: new Map(), // step -> [{id, n, kind}], the last BATCH_KEEP records
    ttftRing: new Ring(128),
    itlRing: new Ring(2048),
    itlAll: new LogHistogram(),
    rate: [], // [{t0_s, t1_s, tokens}] of the last RATE_WINDOW records
    arrival: new Map(), // id -> arrival time, s
    lastToken: new Map(), // id -> time of the request's last sampled token, s
    numOutput: new Map(), // id -> output tokens it kept so far (a verify's stop at output_len)
    preempted: new Set(),
    hold: null, // the last record's waiting requests while it holds them (holdWaiting)
    scratch: new Map(),
    totals: { tokens: 0, ttft_sum_ms: 0, ttft_count: 0, preemptions: 0, waste: 0, slots: 0, finished: 0 },
    t0_s: null,
  };
}

function pushSpan(h, id, kind, i, t0, t1, n) {
  let list = h.spans.get(id);
  if (!list) {
    h.spans.set(id, (list = []));
    h.spanIds.push(id);
  }
  const last = list[list.length - 1];
  // Prefill chunks stay separate spans so each chunk is visible; other kinds merge.
  if (last && last.kind === kind && last.i1 === i - 1 && kind !== "prefill") {
    last.i1 = i;
    last.t1_s = t1;
    last.n += n;
  } else {
    list.push({ kind, i0: i, i1: i, t0_s: t0, t1_s: t1, n });
  }
}

function recordSpans(h, rec, i, t1) {
  const byId = h.scratch; // reused: a step's 512 entries would be a fresh Map every record
  byId.clear();
  for (const e of rec.scheduled) byId.set(e.id, e);
  for (const id of rec.running) {
    const e = byId.get(id);
    if (e) pushSpan(h, id, e.kind, i, rec.time_s, t1, e.n);
    else pushSpan(h, id, "stalled", i, rec.time_s, t1, 0);
  }
}

function waitingKind(h, kv, id) {
  return h.preempted.has(id) ? "preempted" : kv.includes(id) ? "waiting_for_kv" : "waiting";
}

// A P/D decode replica idles while its requests wait for their remote KV (admitting them is a
// step of no time: docs/pd.md, rule D1'): a record that lists requests waiting for KV holds its
// waiting requests till the next record starts, as the server's rows and density have it
// (api/reports/timeline.py). A colocated engine never idles with requests waiting.
function holdWaiting(h, rec, i, t1) {
  const kv = rec.waiting_for_kv ?? []; // P/D: admitted, its remote KV in flight
  if (t1 > rec.time_s) {
    for (const id of rec.waiting) pushSpan(h, id, waitingKind(h, kv, id), i, rec.time_s, t1, 0);
  }
  const held = kv.some((id) => !h.preempted.has(id));
  const waiting = held ? rec.waiting.map((id) => [id, waitingKind(h, kv, id)]) : null;
  h.hold = held ? { iter: rec.iter, i, t0_s: rec.time_s, t1_s: t1, waiting } : null;
}

// The held record's waiting spans run on to `next`'s start (the record right after it).
function releaseHold(h, next) {
  const hold = h.hold;
  h.hold = null;
  if (!hold || next.iter !== hold.iter + 1 || next.time_s <= hold.t1_s) return;
  for (const [id, kind] of hold.waiting) {
    const own = h.spans.get(id);
    if (hold.t1_s > hold.t0_s) own[own.length - 1].t1_s = next.time_s; // pushed by holdWaiting
    else pushSpan(h, id, kind, hold.i, hold.t0_s, next.time_s, 0);
  }
}

// A placeholder (an anonymous batch slot of a vLLM log) is no request from step to step: its
// tokens count towards the output rate, but it has no TTFT or ITL of its own.
function recordTokens(h, rec, t1, run) {
  let tokens = 0;
  for (const e of rec.scheduled) {
    // a verify emits its accepted drafts with its token, cut at max_tokens (the kept rule)
    const numOutput = h.numOutput.get(e.id) ?? 0;
    const [, out] = entryUpdate(e, numOutput, outputLen(run, e.id));
    if (!out) continue;
    h.numOutput.set(e.id, numOutput + out);
    tokens += out;
    if (isPlaceholder(e.id)) continue;
    const prev = h.lastToken.get(e.id);
    if (prev === undefined) {
      const ttft = (t1 - (h.arrival.get(e.id) ?? rec.time_s)) * 1000;
      h.ttftRing.push(ttft);
      h.totals.ttft_sum_ms += ttft;
      h.totals.ttft_count += 1;
    } else {
      const itl = (t1 - prev) * 1000;
      h.itlRing.push(itl);
      h.itlAll.add(itl);
    }
    h.lastToken.set(e.id, t1);
  }
  h.totals.tokens += tokens;
  return tokens;
}

/** The step's verifies (entries with drafts whose output is applied), as vLLM's spec-decode
 * metrics take them: accepted / draft tokens, and 1 + accepted / verifies (null: none). */
export function stepAcceptance(rec) {
  let verifies = 0, drafts = 0, accepted = 0;
  for (const e of rec.scheduled) {
    if (!e.drafts || e.accepted < 0) continue;
    verifies += 1;
    drafts += e.drafts;
    accepted += e.accepted;
  }
  return verifies ? { acceptance_rate: accepted / drafts, mean_acceptance_length: 1 + accepted / verifies }
    : { acceptance_rate: null, mean_acceptance_length: null };
}

function outputLen(run, id) {
  return run?.reqs[run.index.get(id)]?.spec?.output_len;
}

function arrivalTime(run, id, rec) {
  const spec = run?.reqs[run.index.get(id)]?.spec;
  return spec?.arrival_s ?? rec.time_s;
}

function rollingRate(h, rec, t1, tokens) {
  h.rate.push({ t0_s: rec.time_s, tokens });
  if (h.rate.length > RATE_WINDOW) h.rate.shift();
  const span = t1 - h.rate[0].t0_s;
  const sum = h.rate.reduce((a, r) => a + r.tokens, 0);
  return span > 0 ? sum / span : 0;
}

function wasteOf(rec) {
  const w = rec.kv_waste ?? {};
  const slots = Object.values(w).reduce((a, v) => a + v, 0);
  return { slots, waste: slots - (w.token_states ?? 0) };
}

/** Append one record if it is new; returns whether the history grew. */
export function appendRecord(h, rec, run = null) {
  if (rec.iter <= h.lastIter) return false;
  const i = h.length;
  const t1 = rec.time_s + rec.step_time_ms / 1000;
  if (h.t0_s === null) h.t0_s = rec.time_s;
  for (const id of rec.arrivals) h.arrival.set(id, arrivalTime(run, id, rec));
  for (const id of rec.preempted) h.preempted.add(id);
  for (const id of rec.resumed ?? []) h.preempted.delete(id);
  for (const e of rec.scheduled) h.preempted.delete(e.id);
  // A step of no time (a P/D decode replica's step that only admits requests whose KV is in
  // flight) draws no span of its own, as the server's rows have it (api/reports/timeline.py
  // spans_of); its waiting requests are held till the next record (holdWaiting).
  releaseHold(h, rec);
  if (t1 > rec.time_s) recordSpans(h, rec, i, t1);
  holdWaiting(h, rec, i, t1);
  const tokens = recordTokens(h, rec, t1, run);
  const { slots, waste } = wasteOf(rec);
  const tot = h.totals;
  tot.preemptions += rec.preempted.length;
  tot.finished += rec.finished.length;
  tot.slots += slots * rec.step_time_ms;
  tot.waste += waste * rec.step_time_ms;
  h.batches.set(rec.step, rec.scheduled); // records are not mutated once applied
  if (h.batches.size > BATCH_KEEP) h.batches.delete(h.batches.keys().next().value);
  const [ttft50, ttft99] = h.ttftRing.percentiles([50, 99]);
  const [itl50, itl99] = h.itlRing.percentiles([50, 99]);
  const elapsed = t1 - h.t0_s;
  const row = {
    t_s: t1, start_s: rec.time_s, iter: rec.iter, step: rec.step, num_scheduled_tokens: rec.scheduled.reduce((a, e) => a + e.n, 0),
    output_tokens_per_s: rollingRate(h, rec, t1, tokens),
    ttft_p50_ms: orNull(ttft50), ttft_p99_ms: orNull(ttft99),
    itl_p50_ms: orNull(itl50), itl_p99_ms: orNull(itl99),
    kv_usage_pct: rec.kv_usage * 100,
    num_running: rec.running.length - rec.finished.length,
    num_waiting: rec.waiting.length - countIn(rec.waiting, h.preempted),
    num_preempted: countIn(rec.waiting, h.preempted),
    num_preemptions_total: tot.preemptions,
    throughput_tok_per_s: elapsed > 0 ? tot.tokens / elapsed : 0,
    mean_ttft_ms: tot.ttft_count ? tot.ttft_sum_ms / tot.ttft_count : null,
    p99_itl_ms: orNull(h.itlAll.percentile(99)),
    kv_waste_pct: tot.slots > 0 ? (100 * tot.waste) / tot.slots : 0,
    num_finished_total: tot.finished,
    num_first_tokens_total: tot.ttft_count,
    ...stepAcceptance(rec),
  };
  for (const c of COLUMNS) h.cols[c].push(row[c]);
  h.stepToIter.set(rec.step, i);
  h.length = i + 1;
  h.lastIter = rec.iter;
  return true;
}

function countIn(list, set) {
  let n = 0;
  for (const id of list) if (set.has(id)) n += 1;
  return n;
}

// Charts read null as a gap; NaN would poison their scales.
function orNull(v) {
  return Number.isNaN(v) ? null : v;
}
