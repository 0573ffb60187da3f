// Speculative decoding on the wire: each scheduled entry's `drafts` and `accepted` (present
// only when the run speculates) and the tokens an entry yields. Mirrors
// backend/servescope/api/wire/drafts.py (docs/protocol.md, "Packed records": sd, sa, sz).

/** Output tokens a scheduled entry yields: none unless it samples; a verify yields its accepted
 * drafts plus one token; `accepted` -1 marks an output vLLM discards. */
export function tokensOut(e) {
  if (!e.sampled) return 0;
  const accepted = e.accepted ?? 0;
  return accepted < 0 ? 0 : 1 + accepted;
}

/** num_computed_tokens after the entry's update: its rejected drafts rolled back. */
export function computedAfter(e) {
  const accepted = e.accepted ?? 0;
  const rejected = accepted >= 0 ? (e.drafts ?? 0) - accepted : 0;
  return e.start + e.n - rejected;
}

/** [num_computed_tokens after the entry's update, output tokens it keeps]: a speculating
 * entry's tokens stop at the request's output length, and the cut ones come off the computed
 * count too. `outputLen` undefined: no cut. */
export function entryUpdate(e, numOutput, outputLen) {
  const tokens = tokensOut(e);
  const kept = e.drafts !== undefined && outputLen != null ? Math.max(0, Math.min(tokens, outputLen - numOutput)) : tokens;
  return [computedAfter(e) - (tokens - kept), kept];
}

/** Each request's drafts in the last record: the prediction of its drafts in this one. */
function lastDrafts(last) {
  const out = new Map();
  for (const e of last?.scheduled ?? []) if (e.drafts) out.set(e.id, e.drafts);
  return out;
}

/** Each scheduled entry's [drafts, accepted] from packed record `p`; null where none. */
export function unpackDrafts(p, ids, last) {
  if (!p.sd) return null;
  const predicted = lastDrafts(last);
  const sd = new Map();
  for (let k = 0; k + 1 < p.sd.length; k += 2) sd.set(p.sd[k], p.sd[k + 1]);
  const sz = new Map();
  for (let k = 0; k + 1 < (p.sz ?? []).length; k += 2) sz.set(p.sz[k], p.sz[k + 1]);
  const accepted = (p.sa ?? [])[Symbol.iterator]();
  return ids.map((r, pos) => {
    const drafts = sd.has(pos) ? sd.get(pos) : (predicted.get(r) ?? 0);
    return [drafts, drafts ? accepted.next().value : (sz.get(pos) ?? 0)];
  });
}
