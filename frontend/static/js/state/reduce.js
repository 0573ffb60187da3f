// Folds step records (StepRecord.to_dict() shape) into the live state at the cursor: who owns
// each physical KV block, ref counts, fill levels, prefix-cache marks, block tables and lanes.
//
//   block table of r7 (block_size 4):   logical 0   1   2        physical pool
//                                        [ 9 | 3 | 12 ]  --->  ..|3|..|9|..|12|..
//   ref[b] = number of tables holding b; owner[b] = the first live holder (-1 when free).

import { entryUpdate } from "../transport/drafts.js";

export const NO_OWNER = -1;
// run.lookahead[b]: block b holds slots of this step's drafts (vLLM's lookahead slots,
// allocated with the step's blocks), kept; or every draft slot it holds was rejected and rolled
// back (released: the next step writes over them)
export const LOOKAHEAD = { none: 0, reserved: 1, released: 2 };

/** A fresh run from the server's init message. */
export function createRun(init) {
  const numBlocks = init.num_gpu_blocks ?? init.num_blocks;
  const run = {
    numBlocks,
    blockSize: init.block_size,
    config: init.config ?? {},
    source: init.source ?? "simulated",
    ids: [],
    index: new Map(),
    reqs: [],
    owner: new Int32Array(numBlocks).fill(NO_OWNER),
    lastOwner: new Int32Array(numBlocks).fill(NO_OWNER),
    ref: new Uint16Array(numBlocks),
    fill: new Uint8Array(numBlocks),
    cached: new Uint8Array(numBlocks),
    changed: new Uint8Array(numBlocks),
    lookahead: new Uint8Array(numBlocks),
    lookaheadList: [],
    changedList: [],
    tables: new Map(),
    running: [],
    waiting: [],
    record: null,
    cursor: -1,
    facts: null, // what the record at the cursor changed that its post-state no longer shows
  };
  addRequests(run, init.requests ?? []);
  return run;
}

/** Specs of requests in the session's list order (a page of it): each keeps its index. */
export function addRequests(run, specs) {
  for (const spec of specs) {
    const i = requestIndex(run, spec.id, spec);
    run.reqs[i].spec ??= spec;
  }
}

/** Ids starting with "~" stand for no known request: a vLLM log's anonymous batch slots, and
 * the holders of blocks a recording says are in use without saying by whom (~kv, ~cache). */
export const isPlaceholder = (id) => typeof id === "string" && id.startsWith("~");

/** The request's stable index (its colour), registering unseen ids. */
export function requestIndex(run, id, spec = null) {
  let i = run.index.get(id);
  if (i !== undefined) return i;
  i = run.ids.length;
  run.ids.push(id);
  run.index.set(id, i);
  run.reqs.push({
    id, spec, status: "pending", num_computed_tokens: 0, num_output_tokens: 0,
    num_cached_tokens: 0, num_preemptions: 0, placeholder: isPlaceholder(id),
  });
  return i;
}

function touch(run, b) {
  if (!run.changed[b]) {
    run.changed[b] = 1;
    run.changedList.push(b);
  }
}

/** Blocks changed since the renderer last drained them. */
export function drainChanged(run) {
  const list = run.changedList;
  for (const b of list) run.changed[b] = 0;
  run.changedList = [];
  return list;
}

function release(run, id, reassign) {
  const table = run.tables.get(id);
  if (!table) return;
  const idx = run.index.get(id);
  for (const b of table) {
    if (run.ref[b] > 0) run.ref[b] -= 1;
    if (run.ref[b] === 0) {
      run.owner[b] = NO_OWNER;
      if (!run.cached[b]) run.fill[b] = 0;
    } else if (run.owner[b] === idx) {
      reassign.add(b);
    }
    touch(run, b);
  }
  run.tables.delete(id);
}

function allocate(run, id, blocks) {
  const idx = requestIndex(run, id);
  const table = run.tables.get(id) ?? [];
  const first = table.length;
  for (const b of blocks) {
    if (run.ref[b] === 0) {
      run.owner[b] = idx;
      run.lastOwner[b] = idx;
      if (!run.cached[b]) run.fill[b] = 0;
    }
    run.ref[b] += 1;
    table.push(b);
    touch(run, b);
  }
  run.tables.set(id, table);
  return first;
}

function refill(run, id, fromPos) {
  const table = run.tables.get(id);
  if (!table) return;
  const bs = run.blockSize;
  const computed = run.reqs[run.index.get(id)].num_computed_tokens;
  for (let p = Math.max(0, fromPos); p < table.length; p++) {
    const b = table[p];
    const f = Math.max(0, Math.min(bs, computed - p * bs));
    if (f > run.fill[b] || run.owner[b] === run.index.get(id)) {
      run.fill[b] = Math.max(run.fill[b], f);
      touch(run, b);
    }
  }
}

function reassignOwners(run, blocks) {
  if (blocks.size === 0) return;
  for (const [id, table] of run.tables) {
    for (const b of table) {
      if (blocks.has(b)) {
        run.owner[b] = run.index.get(id);
        blocks.delete(b);
      }
    }
    if (blocks.size === 0) return;
  }
}

function applyCacheEvents(run, events) {
  for (const ev of events ?? []) {
    const stored = ev.type === "BlockStored";
    for (const b of ev.block_ids) {
      run.cached[b] = stored ? 1 : 0;
      if (!stored && run.ref[b] === 0) run.fill[b] = 0;
      touch(run, b);
    }
  }
}

/** Mark the blocks holding entry `e`'s draft slots, [start + n - drafts, start + n): released
 * where all of them lie past what the update kept (its rejected drafts), else reserved. */
function markLookahead(run, e, kept) {
  const table = run.tables.get(e.id);
  if (!e.drafts || !table) return;
  const bs = run.blockSize;
  const end = e.start + e.n;
  for (let p = Math.floor((end - e.drafts) / bs); p <= Math.floor((end - 1) / bs) && p < table.length; p++) {
    const b = table[p];
    const from = Math.max(p * bs, end - e.drafts);
    const mark = from >= kept ? LOOKAHEAD.released : LOOKAHEAD.reserved;
    if (run.lookahead[b] === LOOKAHEAD.none) run.lookaheadList.push(b);
    run.lookahead[b] = Math.min(run.lookahead[b] || mark, mark);
    touch(run, b);
  }
}

/** Last step's lookahead marks cleared (each record shows its own). */
export function clearLookahead(run) {
  for (const b of run.lookaheadList) {
    run.lookahead[b] = LOOKAHEAD.none;
    touch(run, b);
  }
  run.lookaheadList = [];
}

function applySchedule(run, rec, firstNew) {
  for (const e of rec.scheduled) {
    const r = run.reqs[requestIndex(run, e.id)];
    if (finishedBefore(run, e.id)) continue;
    const [computed, kept] = entryUpdate(e, r.num_output_tokens, r.spec?.output_len);
    r.num_computed_tokens = computed;
    r.num_output_tokens += kept;
    markLookahead(run, e, r.num_computed_tokens);
    r.status = "running";
    const from = Math.floor(e.start / run.blockSize);
    refill(run, e.id, Math.min(from, firstNew.get(e.id) ?? from));
  }
}

function applyStatuses(run, rec) {
  for (const id of rec.preempted) {
    const r = run.reqs[requestIndex(run, id)];
    // (async scheduling) preempted while its last token was in flight: that token arrived in
    // the previous record's update, and the request finished from the queue
    // and keeps its counts (as the server's stream state does, api/wire/stream_state.py)
    if (r.status !== "finished") {
      r.status = "preempted";
      r.num_computed_tokens = 0;
    }
    r.num_preemptions += 1;
  }
  for (const [id, n] of Object.entries(rec.num_cached_tokens ?? {})) {
    run.reqs[requestIndex(run, id)].num_cached_tokens = n;
  }
  for (const { id } of rec.rejected ?? []) run.reqs[requestIndex(run, id)].status = "rejected";
  for (const id of rec.finished) {
    const r = run.reqs[requestIndex(run, id)];
    r.status = "finished";
    r.finished_step = rec.step;
  }
}

/** Facts of one record the captions need and the state after it no longer holds: each given
 * back table's length, a victim's num_computed_tokens before its preemption, and the free
 * blocks before the step (the previous record's, when it is the one just before). */
function stepFacts(run, rec) {
  const prev = run.record;
  return {
    iter: rec.iter,
    num_blocks_given_back: new Map(),
    num_computed_at_preemption: new Map(),
    num_free_before: prev && prev.iter === rec.iter - 1 ? prev.num_free_blocks : null,
  };
}

function giveBack(run, facts, id, reassign) {
  facts.num_blocks_given_back.set(id, run.tables.get(id)?.length ?? 0);
  release(run, id, reassign);
}

/** (Async speculation) A verify in the previous record finished the request after this step,
 * already scheduled, had appended blocks for it; that update freed its whole table (vLLM's
 * Scheduler._free_request), so this step's blocks and tokens for it are never held. */
function finishedBefore(run, id) {
  return run.reqs[requestIndex(run, id)].status === "finished";
}

/** Apply one record to the live state; the cursor moves to its step. */
export function applyRecord(run, rec) {
  const reassign = new Set();
  const facts = stepFacts(run, rec);
  clearLookahead(run);
  for (const id of rec.preempted) {
    facts.num_computed_at_preemption.set(id, run.reqs[requestIndex(run, id)].num_computed_tokens);
    giveBack(run, facts, id, reassign);
  }
  const firstNew = new Map();
  for (const [id, blocks] of Object.entries(rec.new_blocks)) {
    if (!finishedBefore(run, id)) firstNew.set(id, allocate(run, id, blocks));
  }
  applyCacheEvents(run, rec.kv_events);
  // A request arrives before it is scheduled: one admitted in its arrival step is running.
  for (const id of rec.arrivals) run.reqs[requestIndex(run, id)].status = "waiting";
  applySchedule(run, rec, firstNew);
  applyStatuses(run, rec);
  for (const id of rec.released ?? rec.finished) giveBack(run, facts, id, reassign);
  // The tables decide who holds a block: a freed block still in a live table was freed and
  // allocated again within the step (the static policy's trial admissions do that), so it stays.
  for (const b of rec.freed_blocks) {
    if (run.ref[b] !== 0) continue;
    run.owner[b] = NO_OWNER;
    if (!run.cached[b]) run.fill[b] = 0;
    touch(run, b);
  }
  reassignOwners(run, reassign);
  // Under async scheduling a request finished in the previous record's update was still in
  // the running list when this step was scheduled (its blocks held one schedule longer).
  const live = (id) => run.reqs[requestIndex(run, id)].status !== "finished";
  run.running = rec.running.filter(live);
  run.waiting = rec.waiting.filter(live);
  run.record = rec;
  run.facts = facts;
  run.cursor = rec.step;
}
