// One line in plain words saying what the step just did, for the caption under the pool:
// "r7's 496-token prefill chunk shares this step with 16 decodes". Every cause it names is the
// one the run's policy acted on; tests/frontend/test_caption_truth.py checks them against the
// engine's records for every preset, policy and allocator.

import { preemptClause, resumeClause } from "./caption_preempt.js";
import { waitClause, wasteClause } from "./caption_wait.js";
import { listIds, num, plural, policyOf, reqOf } from "./caption_words.js";

/** Static batching's first step: every member prefills the longest prompt (padding). */
function batchStart(rec) {
  const n = rec.scheduled[0].n;
  const k = rec.scheduled.length;
  return k === 1 ? `a batch of 1 request starts: it prefills ${num(n)} tokens`
    : `a batch of ${k} requests starts: each prefills ${num(n)} tokens, the longest prompt ` +
      "(shorter ones padded)";
}

function decodeClause(rec) {
  const live = rec.scheduled.filter((e) => e.sampled).length;
  const padding = rec.scheduled.length - live;
  const decode = `${plural(live, "request")} ${live === 1 ? "decodes" : "decode"} one token each`;
  // static batching: members that finished go on decoding padding until the batch ends
  return padding ? `${decode} and ${padding} finished ${padding === 1 ? "one decodes" : "ones decode"} padding`
    : decode;
}

function batchClause(run, rec) {
  const prefills = rec.scheduled.filter((e) => e.kind === "prefill");
  const decodes = rec.scheduled.length - prefills.length;
  if (rec.scheduled.length === 0) return "nothing is scheduled this step";
  if (prefills.length === 0) return decodeClause(rec);
  if (policyOf(run) === "static" && rec.new.length > 0) return batchStart(rec);
  const chunks = prefills.slice(0, 2).map((e) => {
    const prompt = reqOf(run, e.id)?.spec?.prompt_len;
    const last = prompt !== undefined && e.start + e.n >= prompt && e.start > 0 ? "last " : "";
    return `${e.id}'s ${last}${num(e.n)}-token prefill chunk`;
  });
  const more = prefills.length > 2 ? ` and ${prefills.length - 2} more chunks` : "";
  const subject = chunks.join(" and ") + more;
  const verb = prefills.length === 1 ? "shares" : "share";
  if (decodes === 0) return `${subject} ${prefills.length === 1 ? "fills" : "fill"} the step`;
  return `${subject} ${verb} this step with ${plural(decodes, "decode")}`;
}

function cacheClause(rec, blockSize) {
  const resumed = new Set(rec.resumed ?? []);
  const hits = Object.entries(rec.num_cached_tokens ?? {}).filter(([id, n]) => n > 0 && !resumed.has(id));
  if (hits.length === 0) return null;
  const [id, n] = hits[0];
  const others = hits.length > 1 ? ` (and ${plural(hits.length - 1, "other")})` : "";
  return `${id}${others} reuses ${num(n)} cached prompt tokens (${plural(n / blockSize, "block")}) ` +
    "from the prefix cache";
}

function finishClause(run, rec) {
  if (rec.finished.length === 0) return null;
  const who = listIds(rec.finished);
  const one = rec.finished.length === 1;
  const released = new Set(rec.released ?? rec.finished);
  if (policyOf(run) === "static" && !rec.finished.some((id) => released.has(id))) {
    const held = rec.finished.reduce((a, id) => a + (run.tables.get(id)?.length ?? 0), 0);
    return `${who} ${one ? "finishes but keeps its" : "finish but keep their"} ${plural(held, "block")} ` +
      "until the batch ends";
  }
  return `${who} ${one ? "finishes" : "finish"}, freeing ${plural(rec.freed_blocks.length, "block")}`;
}

/** The caption for a record; `run` (folded up to it) supplies prompt lengths and counters. */
export function caption(run, rec) {
  if (!rec) return "Press play to start the run.";
  const clauses = [];
  if (rec.preempted.length > 0) clauses.push(preemptClause(run, rec));
  clauses.push(batchClause(run, rec));
  const extra = resumeClause(run, rec) ?? cacheClause(rec, run.blockSize) ?? wasteClause(run, rec) ??
    waitClause(run, rec) ?? finishClause(run, rec);
  if (extra) clauses.push(extra);
  const line = clauses.slice(0, 2).join("; ");
  return `Step ${rec.step}: ${line}.`;
}
