// One line in plain words saying what the step just did, for the caption under the pool:
// "r7's 496-token prefill chunk shares this step with 16 decodes".

function plural(n, word) {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

function listIds(ids, max = 3) {
  if (ids.length <= max) return ids.join(", ");
  return `${ids.slice(0, max).join(", ")} and ${ids.length - max} more`;
}

function spec(run, id) {
  return run.reqs[run.index.get(id)]?.spec ?? null;
}

function batchClause(run, rec) {
  const prefills = rec.scheduled.filter((e) => e.kind === "prefill");
  const decodes = rec.scheduled.length - prefills.length;
  if (rec.scheduled.length === 0) return "Nothing is scheduled this step";
  if (prefills.length === 0) {
    return `${plural(decodes, "request")} ${decodes === 1 ? "decodes" : "decode"} one token each`;
  }
  const chunks = prefills.slice(0, 2).map((e) => {
    const prompt = spec(run, e.id)?.prompt_len;
    const last = prompt !== undefined && e.start + e.n >= prompt && e.start > 0 ? "last " : "";
    return `${e.id}'s ${last}${e.n}-token prefill chunk`;
  });
  const more = prefills.length > 2 ? ` and ${prefills.length - 2} more chunks` : "";
  const subject = chunks.join(" and ") + more;
  const verb = prefills.length === 1 ? "shares" : "share";
  if (decodes === 0) return `${subject} ${prefills.length === 1 ? "fills" : "fill"} the step`;
  return `${subject} ${verb} this step with ${plural(decodes, "decode")}`;
}

function preemptClause(run, rec) {
  const id = rec.preempted[0];
  const r = run.reqs[run.index.get(id)];
  const tokens = (r?.spec?.prompt_len ?? 0) + (r?.num_output_tokens ?? 0);
  const who = rec.preempted.length > 1 ? listIds(rec.preempted) + " are" : id + " is";
  return `${who} preempted: no free KV block for the running batch, so ${
    rec.preempted.length > 1 ? "they give" : "it gives"} back its blocks and will recompute ` +
    (rec.preempted.length > 1 ? "from scratch" : `${tokens} tokens`);
}

function cacheClause(rec, blockSize) {
  const hits = Object.entries(rec.num_cached_tokens ?? {}).filter(([, n]) => n > 0);
  if (hits.length === 0) return null;
  const [id, n] = hits[0];
  const others = hits.length > 1 ? ` (and ${plural(hits.length - 1, "other")})` : "";
  return `${id}${others} reuses ${n} cached prompt tokens (${plural(n / blockSize, "block")}) ` +
    "from the prefix cache";
}

function stallClause(run, rec) {
  const scheduled = new Set(rec.scheduled.map((e) => e.id));
  const stalled = run.running.filter((id) => !scheduled.has(id));
  const used = rec.scheduled.reduce((a, e) => a + e.n, 0);
  if (stalled.length > 0 && used >= rec.token_budget) {
    return `the ${rec.token_budget}-token budget is spent, so ${plural(stalled.length,
      "running request")} ${stalled.length === 1 ? "waits" : "wait"} for the next step`;
  }
  if (rec.waiting.length === 0 || rec.new.length > 0) return null;
  const head = rec.waiting[0];
  if (rec.running.length >= rec.max_num_seqs) {
    return `${head} waits: max_num_seqs (${rec.max_num_seqs}) requests are already running`;
  }
  if (used >= rec.token_budget) return `${head} waits: the token budget is spent`;
  return `${head} waits at the head of the queue: not enough free KV blocks for its prompt`;
}

function finishClause(rec) {
  if (rec.finished.length === 0) return null;
  const who = listIds(rec.finished);
  return `${who} ${rec.finished.length === 1 ? "finishes" : "finish"}, freeing ${
    plural(rec.freed_blocks.length, "block")}`;
}

/** The caption for a record; `run` supplies prompt lengths and counters. */
export function caption(run, rec) {
  if (!rec) return "Press play to start the run.";
  const clauses = [];
  if (rec.preempted.length > 0) clauses.push(preemptClause(run, rec));
  clauses.push(batchClause(run, rec));
  const extra = cacheClause(rec, run.blockSize) ?? stallClause(run, rec) ?? finishClause(rec);
  if (extra) clauses.push(extra);
  const line = clauses.slice(0, 2).join("; ");
  return `Step ${rec.step}: ${line}.`;
}
