// Applies a keyframe: the full state at one step (block tables, prefix-cached blocks, request
// counters, lanes), so a seek or a late join never replays from the first record.
// Owners, ref counts and fills are derived from the tables, as the live reducer derives them.

import { NO_OWNER, requestIndex } from "./reduce.js";

function clearBlocks(run) {
  run.owner.fill(NO_OWNER);
  run.ref.fill(0);
  run.fill.fill(0);
  run.cached.fill(0);
  run.lookahead.fill(0);
  run.lookaheadList = [];
  run.changed.fill(0);
  run.changedList = [];
  run.tables = new Map();
}

function setCounters(run, requests) {
  for (const r of run.reqs) {
    Object.assign(r, { status: "pending", num_computed_tokens: 0, num_output_tokens: 0 });
  }
  for (const [id, c] of Object.entries(requests ?? {})) {
    Object.assign(run.reqs[requestIndex(run, id)], c);
  }
}

function setTables(run, tables) {
  const bs = run.blockSize;
  for (const [id, blocks] of Object.entries(tables ?? {})) {
    const idx = requestIndex(run, id);
    const computed = run.reqs[idx].num_computed_tokens;
    blocks.forEach((b, p) => {
      if (run.ref[b] === 0) {
        run.owner[b] = idx;
        run.lastOwner[b] = idx;
      }
      run.ref[b] += 1;
      run.fill[b] = Math.max(run.fill[b], Math.max(0, Math.min(bs, computed - p * bs)));
    });
    run.tables.set(id, blocks.slice());
  }
}

/** Replace the live state with the keyframe's; `kf.record` (optional) becomes the current record. */
export function applyKeyframe(run, kf) {
  clearBlocks(run);
  setCounters(run, kf.requests);
  setTables(run, kf.tables);
  for (const b of kf.cached_blocks ?? []) {
    run.cached[b] = 1;
    if (run.ref[b] === 0) run.fill[b] = run.blockSize;
  }
  run.running = (kf.running ?? []).slice();
  run.waiting = (kf.waiting ?? []).slice();
  run.record = kf.record ?? null;
  run.facts = null; // a record's own changes are not in a keyframe: captions leave their numbers out
  run.cursor = kf.step;
}
