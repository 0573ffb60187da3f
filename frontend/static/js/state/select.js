// Derived views of a run for the renderers: the batch against its budget, lanes, block tables,
// one block's facts, the lesson table's row. Pure functions of (run, history).

/** This step's batch: one segment per scheduled request, in scheduling order. */
export function batchView(run) {
  const rec = run.record;
  if (!rec) return { segments: [], budget: 0, used: 0, num_seqs: 0, max_num_seqs: 0 };
  let offset = 0;
  const segments = rec.scheduled.map((e) => {
    const seg = { id: e.id, index: run.index.get(e.id), n: e.n, kind: e.kind, offset,
      drafts: e.drafts ?? 0, accepted: e.accepted ?? 0 };
    offset += e.n;
    return seg;
  });
  return {
    segments,
    budget: rec.token_budget,
    used: offset,
    num_seqs: rec.scheduled.length,
    max_num_seqs: rec.max_num_seqs,
    num_prefill_tokens: sumKind(segments, "prefill"),
    num_decode_tokens: sumKind(segments, "decode"),
    speculative: rec.scheduled.length > 0 && rec.scheduled[0].drafts !== undefined,
    num_draft_tokens: segments.reduce((a, s) => a + s.drafts, 0),
    num_accepted_tokens: segments.reduce((a, s) => a + (s.drafts && s.accepted > 0 ? s.accepted : 0), 0),
  };
}

/** The batch line's words on drafts: " · D drafts, A accepted" for a speculating step, and
 * where the acceptances come from (the engine's acceptance_source: recorded, model or none). */
export function draftsCaption(view, source = null) {
  if (!view.speculative) return "";
  const from = source === "none" ? "none, every draft rejected" : source;
  return ` · ${view.num_draft_tokens} draft${view.num_draft_tokens === 1 ? "" : "s"}, ` +
    `${view.num_accepted_tokens} accepted` + (from ? ` (acceptance: ${from})` : "");
}

function sumKind(segments, kind) {
  return segments.reduce((a, s) => a + (s.kind === kind ? s.n : 0), 0);
}

/** Waiting, running and preempted lanes, each a list of request ids in engine order. */
export function lanes(run) {
  const preempted = [];
  const waiting = [];
  for (const id of run.waiting) {
    const r = run.reqs[run.index.get(id)];
    (r && r.status === "preempted" ? preempted : waiting).push(id);
  }
  // P/D: a decode replica's requests admitted whose remote KV is still in flight (a record's
  // waiting_for_kv: core/records.py), a state of their own among the waiting
  const kv = new Set(run.record?.waiting_for_kv ?? []);
  return { waiting, running: run.running.slice(), preempted, waiting_for_kv: kv };
}

/** A request's logical-to-physical mapping with each block's fill, or null when it holds none. */
export function blockTable(run, id) {
  const table = run.tables.get(id);
  if (!table) return null;
  return table.map((block, logical) => ({
    logical, block, fill: run.fill[block], ref: run.ref[block], cached: !!run.cached[block],
  }));
}

/** Everything known about one physical block, for a tooltip. */
export function blockInfo(run, block) {
  if (block < 0 || block >= run.numBlocks) return null;
  const owner = run.owner[block];
  const last = run.lastOwner[block];
  return {
    block,
    is_null: block === 0,
    owner: owner >= 0 ? run.ids[owner] : null,
    last_owner: last >= 0 ? run.ids[last] : null,
    ref_count: run.ref[block],
    fill: run.fill[block],
    block_size: run.blockSize,
    cached: !!run.cached[block],
  };
}

/** One request's counters and spec, for its detail line. */
export function requestInfo(run, id) {
  const i = run.index.get(id);
  if (i === undefined) return null;
  const r = run.reqs[i];
  return { ...r, index: i, num_blocks: run.tables.get(id)?.length ?? 0 };
}

/** History index at or before the cursor's step, -1 when nothing is known yet. */
/** The history's index of record `iter`; -1 when it has not been received (a seek or a
 * catch-up keyframe skipped it). */
export function historyIndexOfIter(history, iter) {
  const iters = history.cols.iter;
  let lo = 0, hi = iters.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (iters[mid] === iter) return mid;
    if (iters[mid] < iter) lo = mid + 1; else hi = mid - 1;
  }
  return -1;
}

export function historyIndexAt(history, step) {
  const i = history.stepToIter.get(step);
  if (i !== undefined) return i;
  const steps = history.cols.step;
  let lo = 0, hi = steps.length - 1, best = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (steps[mid] <= step) { best = mid; lo = mid + 1; } else hi = mid - 1;
  }
  return best;
}

/** The lesson table's row at the cursor: run-to-date throughput, mean TTFT, P99 ITL, KV waste. */
export function lessonRow(run, history) {
  const i = historyIndexAt(history, run.cursor);
  const c = history.cols;
  if (i < 0) {
    return { output_throughput: NaN, mean_ttft_ms: NaN, p99_itl_ms: NaN, kv_waste_pct: NaN,
      num_finished: 0, num_first_tokens: 0 };
  }
  return {
    output_throughput: c.throughput_tok_per_s[i],
    mean_ttft_ms: c.mean_ttft_ms[i],
    p99_itl_ms: c.p99_itl_ms[i],
    kv_waste_pct: c.kv_waste_pct[i],
    num_finished: c.num_finished_total[i], // the requests the row's figures have seen finish
    num_first_tokens: c.num_first_tokens_total[i], // ... and get a first token (mean TTFT's)
  };
}

/** The last `count` steps' batches up to the cursor, oldest first, for the strip. */
export function pastBatches(run, history, count) {
  const out = [];
  const steps = history.cols.step;
  const end = historyIndexAt(history, run.cursor);
  for (let i = Math.max(0, end - count + 1); i <= end; i++) {
    out.push({ step: steps[i], scheduled: history.batches.get(steps[i]) ?? [] });
  }
  return out;
}
