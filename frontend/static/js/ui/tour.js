// The guided tour: lesson playback from the start of the run that stops at the first
// occurrence of each concept, says in words what just happened to which request, and links
// the concept's explainer (/explain).

import { preemptionNote } from "../state/caption_preempt.js";
import { policyOf } from "../state/caption_words.js";

const promptOf = (run, id) => run.reqs[run.index.get(id)]?.spec?.prompt_len;

const partial = (run, rec) => rec.scheduled.find((e) => e.kind === "prefill"
  && (promptOf(run, e.id) ?? Infinity) > e.start + e.n);

function finishedNote(rec, run) {
  const id = rec.finished[0];
  const released = rec.released ?? rec.finished;
  if (policyOf(run) === "static" && !released.includes(id)) {
    return `Notice: ${id} finishes, but static batching keeps its blocks until its whole batch ends.`;
  }
  const who = rec.finished.length > 1 ? `${id} and ${rec.finished.length - 1} more finish` : `${id} finishes`;
  return `Notice: ${who}, and the step returns ${rec.freed_blocks.length} blocks to the pool's ` +
    "free queue, where the next requests take them.";
}

// kind -> (record, run) -> {text, anchor}
export const TOUR_STOPS = {
  chunked_prefill: (rec, run) => {
    const e = partial(run, rec);
    return { anchor: "chunked-prefill", text: `Notice: ${e?.id}'s ${promptOf(run, e?.id)}-token prompt gets ` +
      `${e?.n} tokens this step. Chunked prefill splits it over several steps, so the other requests' decodes go on.` };
  },
  prefix_cache_hit: (rec) => {
    const [id, n] = Object.entries(rec.num_cached_tokens).find(([, v]) => v > 0) ?? ["?", 0];
    return { anchor: "prefix-caching", text: `Notice: ${id} starts with ${n} tokens already in the pool: ` +
      "its first blocks hash the same as cached ones, so prefix caching reuses them instead of computing them again." };
  },
  finished: (rec, run) => ({ anchor: "block-pool", text: finishedNote(rec, run) }),
  budget_blocked: (rec) => ({ anchor: "token-budget", text: `Notice: the ${rec.token_budget}-token budget is ` +
    `spent (the running requests first, in the order they were admitted), so ${rec.waiting[0]} waits this ` +
    "step even if blocks are free." }),
  preemption: (rec, run) => ({ anchor: "preemption", text: preemptionNote(run, rec) }),
};

export const TOUR_START = { anchor: "paged-attention", text: "Tour: each request's KV cache lives in " +
  "blocks of the pool (left), found through its block table. The tour plays step by step and stops " +
  "at the first chunked prefill, prefix-cache hit, finished request, full budget and preemption. " +
  "Press L (Shift+L) or Space to go on." };
