// Why the head of the waiting queue waits, in the terms of the policy that decided: naive runs
// one request at a time, static admits whole batches, vLLM stops at the first request the budget,
// max_num_seqs or the free blocks for its whole prompt do not cover (Scheduler.schedule()).

import { cdiv, countable, factsOf, listIds, num, plural, policyOf, reqOf, tokensOf } from "./caption_words.js";

const used = (rec) => rec.scheduled.reduce((a, e) => a + e.n, 0);
const bitLength = (x) => (x <= 0 ? 0 : 32 - Math.clz32(x));

/** Free blocks after the step's schedule: its update returned only the finished requests'
 * blocks (freed_blocks), as long as nothing was preempted. */
const freeAfterSchedule = (rec) => (rec.preempted.length ? null : rec.num_free_blocks - rec.freed_blocks.length);

function seqsWait(rec, head) {
  return `${head} waits: max_num_seqs (${rec.max_num_seqs}) requests are already running`;
}

/** kv_contiguous.py's reservation: max_model_len (Orca Max), the prompt and the output's next
 * power of two (Pow2), or the real length (Oracle), rounded to the buddy chunk of 2**k blocks. */
function reservation(run, spec) {
  const c = run.config ?? {};
  const real = spec.prompt_len + spec.output_len;
  const tokens = c.allocator === "max" ? Math.max(c.max_model_len ?? 2048, real)
    : c.allocator === "pow2" ? spec.prompt_len + 2 ** bitLength(spec.output_len - 1) : real;
  const blocks = 2 ** bitLength(cdiv(tokens, run.blockSize) - 1);
  return { tokens: blocks * run.blockSize, blocks };
}

function contiguousWait(run, head, free) {
  const spec = reqOf(run, head)?.spec;
  if (!spec) return `${head} waits at the head of the queue: no free contiguous run of KV blocks for its reservation`;
  const { tokens, blocks } = reservation(run, spec);
  const base = `${head} waits at the head of the queue: no free contiguous run of ` +
    `${plural(blocks, "KV block")} for its ${num(tokens)}-token reservation`;
  if (free === null || free === undefined) return base;
  return base + (free >= blocks ? ` (${num(free)} blocks are free, in smaller pieces)`
    : ` (${num(free)} ${free === 1 ? "is" : "are"} free)`);
}

/** The KV cause: the blocks the whole sequence needs against the free ones (`watermark`: V1
 * keeps the watermark back when something runs). */
function kvWait(run, rec, head, free, watermark) {
  const c = run.config ?? {};
  if ((c.allocator ?? "paged") !== "paged") return contiguousWait(run, head, free);
  if (c.scheduler_reserve_full_isl === false) {
    return `${head} waits at the head of the queue: not enough free KV blocks for its first chunk`;
  }
  const outputs = reqOf(run, head)?.num_output_tokens ?? 0;
  const what = outputs ? `whole sequence (prompt and ${plural(outputs, "output token")})` : "whole prompt";
  const base = `${head} waits at the head of the queue: not enough free KV blocks for its ${what}`;
  const total = tokensOf(run, head);
  if (total === null || free === null || free === undefined) return base;
  const need = cdiv(total, run.blockSize);
  const kept = watermark && rec.running.length ? Math.floor((c.watermark ?? 0) * rec.num_usable_blocks) : 0;
  if (need + kept <= free) return base; // (the counts cannot show it: leave them out)
  const hits = c.enable_prefix_caching ? " (less any of its prefix cached in blocks running requests hold)" : "";
  const back = kept ? `, ${plural(kept, "block")} of them kept back as the watermark` : "";
  return `${head} waits at the head of the queue: its ${what}, ${num(total)} tokens, needs ` +
    `${plural(need, "KV block")}${hits} and only ${num(free)} ${free === 1 ? "is" : "are"} free${back}`;
}

/** Without chunking (V1 with chunked prefill off, or V0) the head waits when its remaining
 * prompt exceeds what is left of the budget; its prefix-cache hit (unknown here) shortens that
 * prompt by at most all but its last block. */
function budgetOrKv(run, rec, head, left, free, watermark) {
  const why = policyOf(run) === "vllm-v0" ? "V0 prefills whole prompts" : "chunked prefill is off";
  if (left <= 0) return `${head} waits: the token budget is spent`;
  const total = tokensOf(run, head) ?? Infinity;
  const maxHit = run.config?.enable_prefix_caching ? Math.floor((total - 1) / run.blockSize) * run.blockSize : 0;
  if (Number.isFinite(total) && total - maxHit > left) {
    return `${head} waits: its ${num(total)}-token prompt does not fit the ${num(left)} tokens left ` +
      `of the budget, and ${why}`;
  }
  if (total <= left) return kvWait(run, rec, head, free, watermark);
  return `${head} waits: its prompt does not fit the ${num(left)} tokens left of the budget ` +
    `(${why}) or the free KV blocks`;
}

function naiveWait(run, rec, head) {
  const busy = rec.running[0];
  if (head === undefined || busy === undefined) return null;
  return `${head} waits: naive serving runs one request at a time, and this step is ${busy}'s`;
}

function staticWait(run, rec, head) {
  if (head === undefined) return null;
  const c = run.config ?? {};
  const size = Math.min(c.static_batch_size ?? 8, rec.max_num_seqs);
  if (rec.new.length >= size) return `${head} waits for the next batch: this one is full (${size} requests)`;
  if (rec.new.length > 0) {
    const specs = rec.new.map((id) => reqOf(run, id)?.spec ?? { prompt_len: 0, output_len: 0 });
    const padded = Math.max(...specs.map((s) => s.prompt_len)) + Math.max(...specs.map((s) => s.output_len));
    return `${head} waits for the next batch: the KV cache holds only ${rec.new.length} of this ` +
      `batch's padded reservations (longest prompt + longest output, ${num(padded)} tokens each)`;
  }
  if (rec.running.length > 0) {
    const done = rec.running.filter((id) => reqOf(run, id)?.finished_step < rec.step).length;
    const idle = done === 1 ? " (1 of them has finished and holds its blocks idle)"
      : done ? ` (${done} of them have finished and hold their blocks idle)` : "";
    return `${head} waits for the next batch: static batching lets no one join until all ` +
      `${plural(rec.running.length, "request")} of this batch are done${idle}`;
  }
  const window = c.static_window_s;
  return `${head} waits for a batch to form: ${rec.waiting.length} of ${size} requests are here` +
    (window === null || window === undefined ? "" : `, and the ${window} s window has not closed`);
}

function v0Wait(run, rec, head) {
  if (head === undefined || rec.preempted.length) return null;
  if (rec.running.length >= rec.max_num_seqs) return seqsWait(rec, head);
  if (rec.new.length + rec.resumed.length === 0) {
    // tried before this step's decodes took their blocks: against the previous step's free count
    const free = countable(run) ? factsOf(run, rec)?.num_free_before : null;
    return kvWait(run, rec, head, free, false);
  }
  const left = (run.config?.max_num_batched_tokens ?? rec.token_budget) - used(rec);
  return budgetOrKv(run, rec, head, left, freeAfterSchedule(rec), false);
}

function v1Wait(run, rec, head) {
  const scheduled = new Set(rec.scheduled.map((e) => e.id));
  const stalled = run.running.filter((id) => !scheduled.has(id));
  const left = rec.token_budget - used(rec);
  if (stalled.length > 0 && left <= 0) {
    return `the ${num(rec.token_budget)}-token budget is spent, so ${plural(stalled.length,
      "running request")} ${stalled.length === 1 ? "waits" : "wait"} for the next step`;
  }
  if (head === undefined) return null;
  if (rec.preempted.length) return `${head} waits: no request is admitted in a step that preempts`;
  if (left <= 0) return `${head} waits: the token budget is spent`;
  if (rec.running.length >= rec.max_num_seqs) return seqsWait(rec, head);
  const free = countable(run) ? freeAfterSchedule(rec) : null;
  if (run.config?.enable_chunked_prefill === false) return budgetOrKv(run, rec, head, left, free, true);
  return kvWait(run, rec, head, free, true);
}

const WAITS = { naive: naiveWait, static: staticWait, "vllm-v0": v0Wait, "vllm-v1": v1Wait };

/** Why the head of the queue (or a running request) waits this step, or null. */
export function waitClause(run, rec) {
  return (WAITS[policyOf(run)] ?? v1Wait)(run, rec, rec.waiting[0]);
}

/** Static batching's waste (the W key): members that finished before the batch's longest held
 * their blocks, decoding padding, until it ended. */
export function wasteClause(run, rec) {
  const finished = new Set(rec.finished);
  const early = (rec.released ?? []).filter((id) => !finished.has(id));
  if (early.length === 0) return null;
  const given = factsOf(run, rec)?.num_blocks_given_back;
  const blocks = given ? early.reduce((a, id) => a + (given.get(id) ?? 0), 0) : null;
  const ago = early.map((id) => rec.step - (reqOf(run, id)?.finished_step ?? rec.step));
  const when = ago.every((d) => d > 0) ? `up to ${plural(Math.max(...ago), "step")} earlier` : "earlier";
  const their = early.length === 1 ? "its" : "their";
  const held = blocks === null ? `${their} blocks` : `${their} ${plural(blocks, "block")}`;
  return `the batch ends: ${listIds(early)} had finished ${when} but held ${held}, decoding ` +
    `padding, until ${rec.finished.length ? listIds(rec.finished) : "the last member"} finished`;
}
